/**
 * Payment requirements as the buyer meets them: our ResourcePaymentRequirements (decimal amount, asset with code,
 * issuer and contract id), an x402 v2 `PAYMENT-REQUIRED` header (amount in atomic units, asset = the SAC contract
 * id) or an x402 v1 402 body (`accepts`, `maxAmountRequired`). All become one normalized shape.
 */
import { Asset, Networks, StrKey } from '@stellar/stellar-sdk';
import { fromStroops, toStroops } from '../core/amounts.js';

export type StellarNetwork = 'stellar:testnet' | 'stellar:pubnet';

export interface NormalizedRequirements {
  x402Version: 1 | 2;
  scheme: 'exact';
  network: StellarNetwork;
  /** Decimal amount in units of the asset. */
  amount: string;
  stroops: bigint;
  payTo: string;
  asset: { code?: string; issuer?: string; contractId: string };
  maxTimeoutSeconds?: number;
  resource?: string;
  /** The requirement exactly as the server sent it (echoed back as `accepted` in x402 v2 payloads). */
  raw: Record<string, unknown>;
}

export const PASSPHRASES: Record<StellarNetwork, string> = {
  'stellar:testnet': Networks.TESTNET,
  'stellar:pubnet': Networks.PUBLIC,
};

export function normalizeNetwork(network: string): StellarNetwork {
  const n = network.toLowerCase();
  if (n === 'stellar:testnet' || n === 'stellar-testnet') return 'stellar:testnet';
  if (n === 'stellar:pubnet' || n === 'stellar' || n === 'stellar-pubnet' || n === 'stellar:mainnet')
    return 'stellar:pubnet';
  throw new Error(`Unsupported network ${network}: only stellar:testnet and stellar:pubnet`);
}

export function assetContractId(code: string, issuer: string | undefined, network: StellarNetwork): string {
  const asset = !issuer && (code === 'XLM' || code === 'native') ? Asset.native() : new Asset(code, issuer);
  return asset.contractId(PASSPHRASES[network]);
}

/** Thrown before anything is signed when the asset a requirement shows is not the contract it would have signed. */
export class AssetMismatchError extends Error {
  override readonly name = 'AssetMismatchError';
  readonly code = 'ASSET_MISMATCH';
  constructor(
    readonly shown: { code: string; issuer?: string },
    readonly contractId: string,
    readonly derived: string | null,
    readonly network: string,
  ) {
    super(
      `Refused before signing: the requirement shows ${shown.code}${shown.issuer ? `:${shown.issuer}` : ''} on ` +
        `${network}, ` +
        `which is contract ${derived ?? '(not a valid asset)'}, but asks to sign a transfer of contract ${contractId}`,
    );
  }
}

/**
 * Sign only what is shown: when a requirement names an asset code (and issuer), that asset's Stellar Asset Contract
 * on the requirement's network must be the contract the authorization transfers. Throws AssetMismatchError.
 */
export function assertAssetShown(req: Pick<NormalizedRequirements, 'asset' | 'network'>): void {
  const { code, issuer, contractId } = req.asset;
  if (!StrKey.isValidContract(contractId))
    throw new AssetMismatchError({ code: code ?? '?', issuer }, contractId, null, req.network);
  if (code === undefined && issuer === undefined) return;
  let derived: string | null;
  try {
    derived = assetContractId(code ?? '', issuer, req.network);
  } catch {
    derived = null;
  }
  if (derived !== contractId)
    throw new AssetMismatchError({ code: code ?? '?', issuer }, contractId, derived, req.network);
}

/** Our ResourceDetail.paymentRequirements (or PaymentRequirements with an asset): the terms a resource lists. */
export interface ListedRequirements {
  network: string;
  amount: string;
  payTo: string;
  asset?: { code: string; issuer: string; contractId?: string };
  maxTimeoutSeconds?: number;
  resource?: string;
}

export function fromResourceRequirements(req: ListedRequirements): NormalizedRequirements {
  const network = normalizeNetwork(req.network);
  if (!req.asset) throw new Error('The payment requirements name no asset');
  const contractId = req.asset.contractId ?? assetContractId(req.asset.code, req.asset.issuer, network);
  const normalized: NormalizedRequirements = {
    x402Version: 2,
    scheme: 'exact',
    network,
    amount: req.amount,
    stroops: toStroops(req.amount),
    payTo: req.payTo,
    asset: { code: req.asset.code, issuer: req.asset.issuer, contractId },
    maxTimeoutSeconds: req.maxTimeoutSeconds,
    resource: req.resource,
    raw: req as unknown as Record<string, unknown>,
  };
  assertAssetShown(normalized);
  return normalized;
}

/** One entry of x402 `accepts` (v2: `amount`; v1: `maxAmountRequired`). */
export function fromX402Requirement(x402Version: 1 | 2, req: Record<string, unknown>): NormalizedRequirements {
  const network = normalizeNetwork(String(req.network));
  const atomic = String(req.amount ?? req.maxAmountRequired ?? '');
  if (!/^\d+$/.test(atomic)) throw new Error(`Invalid x402 amount ${atomic}`);
  const extra = (req.extra ?? {}) as Record<string, unknown>;
  const extraAsset = (extra.asset ?? {}) as Record<string, unknown>;
  // The first string among `extra.asset.<field>` and `extra.<flat>` (servers use either form).
  const named = (field: string, flat: string) =>
    [extraAsset[field], extra[flat]].find((v): v is string => typeof v === 'string');
  const code = named('code', 'assetCode');
  const issuer = named('issuer', 'assetIssuer');
  const asset = String(req.asset ?? '');
  let contractId = asset;
  if (!StrKey.isValidContract(asset)) {
    // Some servers name the asset as CODE:ISSUER.
    const [c, i] = asset.split(':');
    if (!c || !i) throw new Error(`Invalid x402 asset ${asset}`);
    contractId = assetContractId(c, i, network);
    return base(c, i);
  }
  return base(code, issuer);

  function base(c: string | undefined, i: string | undefined): NormalizedRequirements {
    const normalized: NormalizedRequirements = {
      x402Version,
      scheme: 'exact',
      network,
      amount: fromStroops(atomic),
      stroops: BigInt(atomic),
      payTo: String(req.payTo),
      asset: { code: c, issuer: i, contractId },
      maxTimeoutSeconds: typeof req.maxTimeoutSeconds === 'number' ? req.maxTimeoutSeconds : undefined,
      resource: typeof req.resource === 'string' ? req.resource : undefined,
      raw: req,
    };
    assertAssetShown(normalized);
    return normalized;
  }
}

/** The x402 PaymentRequired of a 402 response: the v2 header first, else a v1 (or v2) JSON body with `accepts`. */
export function readPaymentRequired(
  headers: Headers,
  body: unknown,
): { x402Version: 1 | 2; accepts: NormalizedRequirements[]; resource?: unknown; refused: Error[] } | null {
  const header = headers.get('payment-required');
  let doc: Record<string, unknown> | null = null;
  if (header) {
    try {
      doc = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as Record<string, unknown>;
    } catch {
      doc = null;
    }
  }
  if (!doc && body && typeof body === 'object' && Array.isArray((body as { accepts?: unknown }).accepts))
    doc = body as Record<string, unknown>;
  if (!doc) return null;
  const version: 1 | 2 = doc.x402Version === 1 ? 1 : 2;
  const accepts: NormalizedRequirements[] = [];
  const refused: Error[] = [];
  for (const a of ((doc.accepts as Array<Record<string, unknown>>) ?? []).slice(0, 16)) {
    if (a?.scheme !== 'exact') continue;
    try {
      accepts.push(fromX402Requirement(version, a));
    } catch (err) {
      // Not a Stellar requirement we can pay (kept: an asset that is not what it shows is reported, never signed).
      refused.push(err as Error);
    }
  }
  return { x402Version: version, accepts, resource: doc.resource, refused };
}
