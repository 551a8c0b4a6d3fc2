import type { Handlers } from '../http/operation-types';
import { DomainError } from '../domain/errors';
import { paymentHash } from '../domain/facilitator/payment-hash';
import { parseAuthorization } from '../domain/facilitator/authorization';
import type { FacilitatorService } from '../domain/facilitator/facilitator-service';
import type { AttemptRecord, ReceiptRecord } from '../domain/facilitator/types';
import type { SignedReceipts } from '../domain/receipts/signed-receipts';
import type { NetworkRegistry } from '../ledger/network-registry';
import { x402Reason } from './reasons';
import { toAtomic, translate, type X402Payload, type X402Requirements } from './translate';

export type X402Operation = 'getSupportedKinds' | 'verifyPaymentPayload' | 'settlePaymentPayload' | 'listBazaarResources' | 'getReceiptKeys';
export type X402Handlers = Pick<Handlers, X402Operation>;

type DiscoveryList = Handlers['listDiscoveryResources'];

export interface X402Deps {
  facilitator: FacilitatorService;
  networks: NetworkRegistry;
  /** Attempts recorded for one authorization (payment hash), any status. */
  attemptsByHash(hash: string): Promise<AttemptRecord[]>;
  /** Channel accounts that sign settlement transactions on a network. */
  signers(network: string): string[];
  listDiscovery: DiscoveryList;
  receipts: SignedReceipts;
}

/** How many catalog entries the Bazaar list walks at most (offset pagination over our cursor pages). */
const BAZAAR_WINDOW = 1000;
const X402_VERSION = 2;
const ANNOUNCED_TIMEOUT_SECONDS = 300;

function failure(err: unknown): { code: DomainError['code'] | null; message: string } {
  if (err instanceof DomainError) return { code: err.code, message: `${err.code}: ${err.message}` };
  return { code: null, message: 'unexpected error' };
}

/**
 * The x402 v2 facilitator API (`/x402/*`): translation only. verify and settle run the same use cases as
 * /v1/verify and /v1/settle, so attempts, settlements, receipts, replay protection and the one-winner claim are
 * the same records and guarantees.
 */
export function x402Handlers(deps: X402Deps): X402Handlers {
  /** The attempt this authorization already has (verified, or claimed/settled), else null. */
  async function recordedAttempt(transaction: string): Promise<AttemptRecord | null> {
    const hash = paymentHash(parseAuthorization('transaction', transaction).entryXdr);
    const attempts = await deps.attemptsByHash(hash);
    return attempts.find((a) => a.status !== 'verification_failed' && a.status !== 'created') ?? null;
  }

  async function signedReceiptOf(receipt: ReceiptRecord, payer: string, resourceUrl: string | null): Promise<string | null> {
    return deps.receipts.sign(receipt, payer, resourceUrl);
  }

  return {
    async getSupportedKinds() {
      const kinds = deps.networks
        .list()
        .filter((n) => n.settlementEnabled)
        .map((n) => ({ x402Version: X402_VERSION, scheme: 'exact', network: n.network, extra: { areFeesSponsored: true } }));
      const signers: Record<string, string[]> = {};
      for (const n of deps.networks.list()) {
        const addresses = deps.signers(n.network);
        if (addresses.length > 0) signers[n.network] = addresses;
      }
      return { status: 200, body: { kinds, extensions: ['bazaar'], signers } };
    },

    async verifyPaymentPayload({ body }) {
      const payload = body.paymentPayload as unknown as X402Payload;
      let payer: string | undefined;
      try {
        const t = translate(payload, body.paymentRequirements as X402Requirements, deps.networks);
        payer = t.payer;
        const attempt = await deps.facilitator.verify({ paymentPayload: t.paymentPayload, paymentRequirements: t.paymentRequirements });
        return { status: 200, body: { isValid: true, payer: attempt.payer, extensions: { marketplace: { paymentAttemptId: attempt.id } } } };
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        const f = failure(err);
        return { status: 200, body: { isValid: false, invalidReason: x402Reason(f.code, 'verify'), invalidMessage: f.message, ...(payer ? { payer } : {}) } };
      }
    },

    async settlePaymentPayload({ body }) {
      const payload = body.paymentPayload as unknown as X402Payload;
      const network = String(body.paymentRequirements.network);
      let payer: string | undefined;
      try {
        const t = translate(payload, body.paymentRequirements as X402Requirements, deps.networks);
        payer = t.payer;
        // The stock flow verifies first: settle the attempt that verify recorded. A direct settle verifies here.
        const recorded = await recordedAttempt(t.paymentPayload.authorization.xdr);
        const attempt =
          recorded ?? (await deps.facilitator.verify({ paymentPayload: t.paymentPayload, paymentRequirements: t.paymentRequirements }));
        // The settle use case decides every state (already claimed or settled: REPLAY_DETECTED; expired; failed). An
        // uncataloged URL (no resource) settles on the attempt's own verified terms; its receipt has no resource.
        const outcome = await deps.facilitator.settle({ paymentAttemptId: attempt.id, paymentPayload: t.paymentPayload, resourceId: attempt.resourceId ?? null });
        const settled = outcome.status === 'settled';
        const jws = settled ? await signedReceiptOf(outcome.receipt, attempt.payer, t.resourceUrl) : null;
        const extensions: Record<string, unknown> = {
          marketplace: { receiptId: outcome.receipt.id, paymentAttemptId: attempt.id, evidence: outcome.receipt.evidence, ...(jws ? { signedReceipt: jws } : {}) },
          ...(jws ? { 'offer-receipt': { info: { receipt: { format: 'jws', signature: jws } } } } : {}),
        };
        if (settled) {
          return { status: 200, body: { success: true, payer: attempt.payer, transaction: outcome.settlement.transactionHash, network: outcome.settlement.network, extensions } };
        }
        return {
          status: 202,
          body: {
            success: false,
            errorReason: 'settlement_pending',
            errorMessage: 'Submitted; not confirmed yet. The payment is recorded and the confirmation worker finishes it.',
            payer: attempt.payer,
            transaction: outcome.settlement.transactionHash,
            network: outcome.settlement.network,
            extensions,
          },
        };
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        const f = failure(err);
        return { status: 200, body: { success: false, errorReason: x402Reason(f.code, 'settle'), errorMessage: f.message, transaction: '', network, ...(payer ? { payer } : {}) } };
      }
    },

    async listBazaarResources(ctx) {
      const { type, limit = 20, offset = 0 } = ctx.query;
      const walked: Array<Awaited<ReturnType<typeof page>>["resources"][number]> = [];
      let cursor: string | undefined;
      async function page(c: string | undefined) {
        const res = await deps.listDiscovery({ ...ctx, query: { ...(type ? { type } : {}), limit: 100, ...(c ? { cursor: c } : {}) } } as Parameters<DiscoveryList>[0]);
        if (res.status !== 200) throw new DomainError('SERVICE_UNAVAILABLE', 'The discovery index is unavailable');
        return res.body;
      }
      for (;;) {
        const body = await page(cursor);
        walked.push(...body.resources);
        if (!body.nextCursor || walked.length >= BAZAAR_WINDOW) break;
        cursor = body.nextCursor;
      }
      const window = walked.slice(0, BAZAAR_WINDOW);
      const items = window.slice(offset, offset + limit).map((r) => {
        const asset = deps.networks.asset(r.network, r.assetCode, r.assetIssuer);
        return {
          resource: r.url,
          type: r.type,
          x402Version: X402_VERSION,
          accepts: asset
            ? [{ scheme: 'exact', network: r.network, asset: asset.contractId, amount: toAtomic(r.amount), payTo: r.payTo, maxTimeoutSeconds: ANNOUNCED_TIMEOUT_SECONDS, extra: { areFeesSponsored: true } }]
            : [],
          lastUpdated: ulidTime(r.id),
          metadata: { resourceId: r.id, sellerId: r.sellerId, name: r.name, description: r.description, routeTemplate: r.routeTemplate, status: r.status },
        };
      });
      return { status: 200, body: { x402Version: X402_VERSION, items, pagination: { limit, offset, total: window.length } } };
    },

    async getReceiptKeys() {
      return { status: 200, body: await deps.receipts.jwks() };
    },
  };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The creation time a prefixed ULID carries (its first 10 characters), ISO 8601. */
function ulidTime(id: string): string {
  const ulid = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11).toUpperCase();
  let ms = 0;
  for (const ch of ulid) ms = ms * 32 + Math.max(0, CROCKFORD.indexOf(ch));
  return new Date(ms).toISOString();
}
