/**
 * The paywall's own checks (issue 32): problems of the SELLER's setup are found and said at the seller, and buyers
 * get words about whose side is wrong instead of the marketplace's answer to the seller's key.
 *
 * - The payments key: checked once when the paywall is created (and again on first use while the check could not
 *   run) by reading an endpoint the key may read: the seller's own payments (`GET /v1/sellers/{sellerId}/payments`,
 *   one item). A `401`/`403` answer (a mistyped, revoked or foreign key) is logged loudly at the seller
 *   (`onMisconfigured`, default `console.error`) and `ready()` rejects; from then on every buyer gets
 *   `503 SERVICE_UNAVAILABLE` "the seller is misconfigured", before anything is signed. A network failure is not
 *   a verdict: the next request checks again.
 * - A refused transfer for a missing trustline (`TRUSTLINE_REQUIRED`): the paywall reads the seller's `payTo` wallet;
 *   when the seller's wallet cannot receive the asset the buyer is told so (and the seller is warned), otherwise the
 *   buyer is told that its own wallet has no trustline.
 */
import { ApiError } from '../core/errors.js';

export class PaywallConfigurationError extends Error {
  override readonly name = 'PaywallConfigurationError';
  constructor(
    message: string,
    readonly cause: ApiError,
  ) {
    super(message);
  }
}

export interface KeyCheckClient {
  resources: {
    get(id: string): Promise<{ sellerId?: string }>;
    getPublic?(id: string): Promise<{ sellerId?: string }>;
  };
  /** Optional `list`: a client without it is not checked. */
  payments?: { list?(query: { sellerId?: string; limit?: number }): Promise<unknown> };
}

/** What a buyer reads when the seller's key is refused: nothing was charged, nothing to fix on the buyer's side. */
export const MISCONFIGURED_MESSAGE =
  'The seller is misconfigured: the marketplace refused its payments key, so it cannot take payments now. ' +
  'Nothing was charged; try again later.';

/** Runs the key check; `refused()` is the verdict once the marketplace answered 401/403 (null otherwise). */
export function createKeyCheck(client: KeyCheckClient, resourceId: string, report: (message: string) => void) {
  let verdict: PaywallConfigurationError | null = null;
  let passed = false;
  let running: Promise<void> | null = null;

  function refuse(err: ApiError): PaywallConfigurationError {
    if (!verdict) {
      verdict = new PaywallConfigurationError(
        `paywall(${resourceId}): the marketplace refused this paywall's API key (${err.status} ${err.code}: ` +
          `${err.message}). Every buyer is answered 503 "the seller is misconfigured" until the paywall runs with ` +
          `a valid payments key of the resource's seller (seller.keys.create(sellerId, { scope: 'payments' })).`,
        err,
      );
      report(verdict.message);
    }
    return verdict;
  }

  async function run(): Promise<void> {
    if (!client.payments?.list) return void (passed = true); // a client without the read cannot be checked
    const read = client.resources.getPublic ?? client.resources.get;
    const { sellerId } = await read(resourceId);
    try {
      await client.payments.list({ sellerId, limit: 1 });
      passed = true;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) throw refuse(err);
      throw err;
    }
  }

  return {
    /** Resolves once the key was accepted; rejects with PaywallConfigurationError when it was refused. */
    ready(): Promise<void> {
      if (verdict) return Promise.reject(verdict);
      if (passed) return Promise.resolve();
      running ??= run().finally(() => (running = null));
      return running;
    },
    /** The answer to a facilitator call refused the key itself (revoked after start, for instance). */
    refusedBy(err: unknown): boolean {
      if (!(err instanceof ApiError) || (err.status !== 401 && err.status !== 403)) return false;
      refuse(err);
      return true;
    },
    refused: () => verdict,
  };
}

export interface ReadinessClient {
  wallet?: {
    readiness(
      walletAddress: string,
      network?: string,
    ): Promise<{ checks: Array<{ network: string; asset: { code: string; issuer: string }; ready: boolean }> }>;
  };
}

/** Whose wallet lacks the trustline: the seller's payTo (it cannot receive) or, by elimination, the buyer's. */
export async function trustlineMessage(
  client: ReadinessClient,
  terms: { network: string; payTo: string; asset: { code: string; issuer: string } },
): Promise<{ side: 'seller' | 'buyer' | 'unknown'; message: string }> {
  const code = terms.asset.code;
  let sellerReady: boolean | null = null;
  if (client.wallet && terms.payTo.startsWith('G')) {
    const readiness = await client.wallet.readiness(terms.payTo, terms.network).catch(() => null);
    const check = readiness?.checks.find(
      (c) => c.network === terms.network && c.asset.code === terms.asset.code && c.asset.issuer === terms.asset.issuer,
    );
    sellerReady = check ? check.ready : null;
  }
  if (sellerReady === false)
    return {
      side: 'seller',
      message:
        `The seller's wallet cannot receive ${code}: ${terms.payTo} has no ${code} trustline on ${terms.network}. ` +
        `The seller must add one; nothing was charged.`,
    };
  if (sellerReady === true)
    return {
      side: 'buyer',
      message:
        `Your wallet has no ${code} trustline on ${terms.network} (or it is frozen): add a trustline to ${code} ` +
        `issued by ${terms.asset.issuer} (a changeTrust operation) and pay again; nothing was charged.`,
    };
  return {
    side: 'unknown',
    message:
      `A wallet has no ${code} trustline on ${terms.network}: yours (the payer's) or the seller's ` +
      `(${terms.payTo}); nothing was charged.`,
  };
}
