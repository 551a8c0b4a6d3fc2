/**
 * Today's stock x402 packages with the registry's Stellar scheme (issue #30).
 *
 * `npm install @x402/express` (or `@x402/hono`, `@x402/fetch`) gives 2.27, while `@x402/stellar` on the registry is
 * still 2.9. The 2.27 interfaces ask a scheme for members 2.9 does not have:
 * - a server scheme (`SchemeNetworkServer`) must declare `defaultAssetTransferMethod` and `paymentFlows`, or 2.27's
 *   `paymentMiddleware` throws when it resolves a route's payment flow;
 * - a client scheme (`SchemeNetworkClient`) should answer `findDefaultAsset`, or 2.27's default spend controls refuse
 *   every Stellar asset ("All payment requirements were rejected by spendControls").
 *
 * These two functions wrap the stock `ExactStellarScheme` (never patching it): the wrapper is a new object whose
 * prototype is the stock instance, so every method and setting of the stock scheme is used as it is, plus the
 * missing members. A scheme that already declares a member (a future @x402/stellar) keeps its own. Neither function
 * imports any x402 package: they work with whatever versions the seller installed.
 */

/** x402 payment flows (@x402/core ≥ 2.2x `PaymentFlowName`). */
export type X402PaymentFlow = 'authorization' | 'upfront' | 'escrow';

/** `SchemeNetworkServer.paymentFlows`: per asset transfer method, the flows it supports and its default. */
export type X402PaymentFlowTable = Readonly<
  Record<string, { readonly supported: readonly X402PaymentFlow[]; readonly default: X402PaymentFlow }>
>;

/** The SDK's key for a scheme without an on-wire `assetTransferMethod` (@x402/core's
 * `SDK_DEFAULT_ASSET_TRANSFER_METHOD`). */
export const STELLAR_DEFAULT_ASSET_TRANSFER_METHOD = 'default';

/**
 * The flows of the `exact` scheme on Stellar as this marketplace's facilitator settles them (its `/x402/supported`
 * declares the same in each kind's `extra.paymentFlows`):
 * - `authorization` (the default): verify before the handler, settle after it, as the scheme's spec describes;
 * - `upfront`: settle before the handler. The payment is the same SEP-41 `transfer` signed by the payer, and the
 *   facilitator's settle runs every verification rule itself, so no contract beyond the token's is needed.
 * `escrow` is not offered: holding funds and releasing them later needs an escrow contract the `exact` Stellar
 * scheme does not define.
 */
export const STELLAR_EXACT_PAYMENT_FLOWS: X402PaymentFlowTable = Object.freeze({
  [STELLAR_DEFAULT_ASSET_TRANSFER_METHOD]: Object.freeze({
    supported: Object.freeze(['authorization', 'upfront'] as const),
    default: 'authorization' as const,
  }),
});

/** What 2.27's spend controls read of a default asset. */
export interface StellarDefaultAsset {
  asset: string;
  decimals: number;
  symbol: string;
}

/**
 * Circle's USDC, the default asset of the stock Stellar scheme (its `'$0.01'` prices are in it), by network: the
 * contract addresses @x402/stellar 2.9 uses (`USDC_TESTNET_ADDRESS`, `USDC_PUBNET_ADDRESS`), 7 decimals.
 */
export const STELLAR_DEFAULT_ASSETS: Readonly<Record<string, readonly StellarDefaultAsset[]>> = Object.freeze({
  'stellar:testnet': Object.freeze([
    { asset: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA', decimals: 7, symbol: 'USDC' },
  ]),
  'stellar:pubnet': Object.freeze([
    { asset: 'CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75', decimals: 7, symbol: 'USDC' },
  ]),
});

/** The members a 2.27 server scheme needs that the stock Stellar server scheme 2.9 lacks. */
export interface StellarServerSchemeMembers {
  readonly defaultAssetTransferMethod: string;
  readonly paymentFlows: X402PaymentFlowTable;
}

/** The member a 2.27 client scheme needs for its default spend controls. */
export interface StellarClientSchemeMembers {
  findDefaultAsset(asset: string, network: string): StellarDefaultAsset | undefined;
}

/** A new object that is `scheme` (its prototype) plus `members`, except those `scheme` already has. */
function extend<T extends object, M extends object>(scheme: T, members: M): T & M {
  const wrapper = Object.create(scheme) as T & M;
  for (const [key, value] of Object.entries(members)) {
    if ((scheme as Record<string, unknown>)[key] === undefined)
      Object.defineProperty(wrapper, key, { value, enumerable: true });
  }
  return wrapper;
}

/**
 * The stock `ExactStellarScheme` server (`@x402/stellar/exact/server`) ready for @x402/express, @x402/hono or
 * @x402/core 2.27's `x402ResourceServer`: adds `defaultAssetTransferMethod: 'default'` and
 * {@link STELLAR_EXACT_PAYMENT_FLOWS}.
 *
 * @example
 * const server = new x402ResourceServer(facilitator).register('stellar:testnet', adaptStellarServerScheme(new
 * ExactStellarScheme()));
 */
export function adaptStellarServerScheme<T extends { readonly scheme: string }>(
  scheme: T,
): T & StellarServerSchemeMembers {
  return extend(scheme, {
    defaultAssetTransferMethod: STELLAR_DEFAULT_ASSET_TRANSFER_METHOD,
    paymentFlows: STELLAR_EXACT_PAYMENT_FLOWS,
  });
}

/**
 * The stock `ExactStellarScheme` client (`@x402/stellar/exact/client`) ready for @x402/fetch or @x402/core 2.27's
 * `x402Client`: adds `findDefaultAsset`, which recognizes Circle's USDC ({@link STELLAR_DEFAULT_ASSETS}, or
 * `assets` when given), so the client's default spend controls (default assets only, at most $1 a payment) let
 * Stellar USDC payments through and cap them like any other default asset.
 */
export function adaptStellarClientScheme<T extends { readonly scheme: string }>(
  scheme: T,
  assets: Readonly<Record<string, readonly StellarDefaultAsset[]>> = STELLAR_DEFAULT_ASSETS,
): T & StellarClientSchemeMembers {
  const findDefaultAsset = (asset: string, network: string): StellarDefaultAsset | undefined => {
    const found = assets[network]?.find((a) => a.asset === asset);
    return found ? { ...found } : undefined;
  };
  return extend(scheme, { findDefaultAsset });
}
