import { DomainError } from '../../domain/errors';
import { MAX_AMOUNT_STROOPS, stroops, toStroops, type Stroops } from '../../domain/amount';
import { addressOf, decodePayment, type DecodedPayment } from '../../domain/facilitator/rules/decode';
import { addressCredentialsOf } from '../../domain/facilitator/cap71-xdr';
import { checkPaymentFlow } from '../../domain/facilitator/rules/flows';
import type { PaymentPayloadInput, PaymentRequirementsInput } from '../../domain/facilitator/verify-payment';
import type { NetworkRegistry, RegisteredAsset } from '../../domain/network-registry';

/** x402 v2 wire shapes (as @x402/core 2.x sends them). */
export interface X402Requirements {
  scheme: string;
  network: string;
  asset: string;
  amount: string;
  payTo: string;
  maxTimeoutSeconds?: number;
  extra?: Record<string, unknown>;
}

export interface X402Payload {
  x402Version: number;
  resource?: { url: string; description?: string; mimeType?: string };
  accepted: X402Requirements;
  payload: { transaction?: string } & Record<string, unknown>;
  extensions?: Record<string, unknown>;
}

export interface Translated {
  paymentPayload: PaymentPayloadInput;
  paymentRequirements: PaymentRequirementsInput & { maxTimeoutSeconds?: number };
  payer: string | undefined;
  /** The resource URL the client paid for, when it said. */
  resourceUrl: string | null;
}

/** The registered asset whose contract address is `asset` on `network` (x402 names assets by contract). */
export function assetByContract(
  networks: NetworkRegistry,
  network: string,
  contractId: string,
): RegisteredAsset | undefined {
  return networks.get(network)?.assets.find((a) => a.contractId === contractId);
}

/**
 * The payload's transaction decoded once per request (decodeX402): the x402 face reads the payer it names from it
 * (payment-identifier scope, the payer of an answer), and the facilitator's rules read the same decoded parts (no
 * second decode in the domain). A transaction that is not readable keeps its refusal, thrown by translate where
 * it reads the transaction, so the order of refusals is the same as when each step decoded on its own.
 */
export interface DecodedX402 {
  decoded: DecodedPayment | null;
  failure: DomainError | null;
  /** The payer the first address-credential auth entry names (unchecked: the rules judge it). */
  payer: string | undefined;
}

export function decodeX402(payload: X402Payload): DecodedX402 {
  const transaction = payload.payload?.transaction;
  if (typeof transaction !== 'string' || transaction.length === 0)
    return { decoded: null, failure: null, payer: undefined };
  let decoded: DecodedPayment;
  try {
    decoded = decodePayment('transaction', transaction);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    return { decoded: null, failure: err, payer: undefined };
  }
  return { decoded, failure: null, payer: payerNamed(decoded) };
}

/**
 * Turns the x402 `exact` Stellar request into our use cases' inputs: the asset's contract address becomes the
 * registered asset (contract id, code, issuer), atomic amounts become Stroops (once, here), and the payload's
 * transaction envelope becomes the authorization (format `transaction`; the facilitator takes the signed entry out
 * of it), handed over decoded. The
 * payload declares its amount, payTo and asset (`accepted`); the expiry and the payer are the signed ones, so none
 * is made up here for the rules to compare. Nothing is checked here that the use case checks: unknown networks and
 * assets go through as they are, so the use case answers them.
 */
export function translate(
  payload: X402Payload,
  requirements: X402Requirements,
  networks: NetworkRegistry,
  read: DecodedX402,
): Translated {
  const transaction = payload.payload?.transaction;
  if (typeof transaction !== 'string' || transaction.length === 0) {
    throw new DomainError(
      'INVALID_PAYMENT_PAYLOAD',
      'The x402 payload carries no Stellar transaction (payload.transaction)',
    );
  }
  const amountStroops = BigInt(requirements.amount);
  if (amountStroops <= 0n || amountStroops > MAX_AMOUNT_STROOPS)
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The required amount must be a positive number of stroops');
  const accepted = payload.accepted;
  // Issue #30: the payment flow (extra.paymentFlow) must be one we settle (rules/flows.ts).
  checkPaymentFlow(requirements.extra, accepted?.extra);
  if (!networks.get(requirements.network))
    throw new DomainError('UNSUPPORTED_NETWORK', `Network ${requirements.network} is not supported`);
  if (accepted.network !== requirements.network)
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'The payload network differs from the required network');
  const required = assetByContract(networks, requirements.network, requirements.asset);
  if (!required)
    throw new DomainError(
      'UNSUPPORTED_ASSET',
      `Asset ${requirements.asset} is not supported on ${requirements.network}`,
    );
  const paid = assetByContract(networks, accepted.network, accepted.asset) ?? required;
  if (read.failure) throw read.failure;
  const resourceUrl = typeof payload.resource?.url === 'string' ? payload.resource.url : null;
  const amount = stroops(amountStroops);
  // An accepted amount beyond any amount is not an amount (null), so the declared-terms rule refuses it.
  const acceptedAtomic = /^[0-9]{1,20}$/.test(accepted.amount ?? '') ? BigInt(accepted.amount) : null;
  const acceptedAmount: Stroops | null =
    acceptedAtomic === null ? amount : acceptedAtomic <= MAX_AMOUNT_STROOPS ? stroops(acceptedAtomic) : null;
  return {
    payer: read.payer,
    resourceUrl,
    paymentPayload: {
      ...(typeof payload.x402Version === 'number' ? { x402Version: payload.x402Version } : {}),
      scheme: accepted.scheme,
      network: accepted.network,
      asset: { code: paid.code, issuer: paid.issuer, contractId: paid.contractId },
      amount: acceptedAmount,
      payTo: accepted.payTo,
      authorization: { format: 'transaction', xdr: transaction },
      ...(read.decoded ? { decoded: read.decoded } : {}),
    },
    paymentRequirements: {
      scheme: requirements.scheme,
      network: requirements.network,
      amount,
      payTo: requirements.payTo,
      asset: { code: required.code, issuer: required.issuer, contractId: required.contractId },
      ...(resourceUrl ? { resource: resourceUrl } : {}),
      ...(requirements.maxTimeoutSeconds !== undefined ? { maxTimeoutSeconds: requirements.maxTimeoutSeconds } : {}),
    },
  };
}

/** The payer of the transaction's first address-credential auth entry, read without judging anything. */
function payerNamed(decoded: DecodedPayment): string | undefined {
  try {
    const ac = decoded.authEntries.map((e) => addressCredentialsOf(e.credentials())).find((body) => body !== null);
    return ac ? addressOf(ac.address()) : undefined;
  } catch {
    return undefined;
  }
}

/** Our decimal amount in atomic units (stroops) as x402 writes amounts. */
export function toAtomic(amount: string): string {
  return toStroops(amount).toString();
}
