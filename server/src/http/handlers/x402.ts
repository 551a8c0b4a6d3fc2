import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import { DomainError } from '../../domain/errors';
import { x402ReasonOfRule } from '../../domain/facilitator/rules/catalog';
import { SUPPORTED_PAYMENT_FLOWS } from '../../domain/facilitator/rules/flows';
import { x402Reason } from '../x402/reasons';
import { decodeX402, translate, type DecodedX402, type X402Payload, type X402Requirements } from '../x402/translate';
import { clampPaging, type BazaarFilters } from '../../domain/discovery/bazaar';
import { PAYMENT_IDENTIFIER } from '../../domain/facilitator/payment-identifier';
import type { Principal } from '../../domain/auth/principal';
import type { SettleOutcome } from '../../domain/facilitator/settle-payment';
import type { components } from '../../generated/openapi';
import {
  bazaarAtSettle,
  bazaarAtVerify,
  extensionResponsesHeader,
  paymentIdentifierKey,
} from '../x402/extension-responses';

type X402VerifyBody = components['schemas']['X402VerifyResponse'];
type X402SettleBody = components['schemas']['X402SettleResponse'];
/** The x402 reason of a non-terminal settle answer (spec v2; @x402/core >= 2.24 retries it once). */
const SETTLEMENT_PENDING = 'settlement_pending';

type X402Handlers = Pick<
  Handlers,
  | 'getSupportedKinds'
  | 'getFacilitatorDescription'
  | 'verifyPaymentPayload'
  | 'settlePaymentPayload'
  | 'listBazaarResources'
  | 'searchBazaarResources'
>;

const X402_VERSION = 2;

function failure(err: DomainError, operation: 'verify' | 'settle'): { reason: string; message: string } {
  const rule = err.details[0]?.code;
  return { reason: x402ReasonOfRule(rule) ?? x402Reason(err.code, operation), message: `${err.code}: ${err.message}` };
}

/**
 * The x402 v2 SupportedResponse, read now: /x402/supported and /.well-known/x402 both answer it. Each kind declares
 * the payment flows it settles in `extra.paymentFlows` (issue #30; rules/flows.ts says why not `escrow`).
 */
function supported(deps: HandlerServices) {
  const kinds = deps.networks
    .list()
    .filter((n) => n.settlementEnabled)
    .map((n) => ({
      x402Version: X402_VERSION,
      scheme: 'exact',
      network: n.network,
      extra: { areFeesSponsored: true, paymentFlows: [...SUPPORTED_PAYMENT_FLOWS] },
    }));
  const signers: Record<string, string[]> = {};
  for (const n of deps.networks.list()) {
    const addresses = [...deps.facilitatorAddresses(n.network)];
    if (addresses.length > 0) signers[n.network] = addresses;
  }
  return { kinds, extensions: ['bazaar', PAYMENT_IDENTIFIER], signers };
}

async function verifyAnswer(
  deps: HandlerServices,
  payload: X402Payload,
  requirements: X402Requirements,
  principal: Principal,
  read: DecodedX402,
): Promise<{ status: 200; body: X402VerifyBody; headers: Record<string, string> }> {
  let payer: string | undefined;
  try {
    const t = translate(payload, requirements, deps.networks, read);
    payer = t.payer;
    // Verify commits nothing here: settle verifies again on its own and records the attempt when it claims it.
    const checked = await deps.facilitator.check({
      paymentPayload: t.paymentPayload,
      paymentRequirements: t.paymentRequirements,
      principal,
    });
    const outcomes = bazaarAtVerify(payload, requirements, checked.payer);
    return {
      status: 200,
      body: {
        isValid: true,
        payer: checked.payer,
        ...(Object.keys(outcomes).length ? { extensions: outcomes } : {}),
      },
      headers: extensionResponsesHeader(outcomes),
    };
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    const f = failure(err, 'verify');
    return {
      status: 200,
      body: { isValid: false, invalidReason: f.reason, invalidMessage: f.message, ...(payer ? { payer } : {}) },
      headers: {},
    };
  }
}

/**
 * Settle's x402 answer. `settlement_pending` (spec v2; @x402/core >= 2.24) is a non-terminal `success: false` with
 * the submitted transaction and its network, answered 200 like every SettleResponse: the stock server's one
 * automatic retry of the same payload reconciles that transaction (settle-payment.ts reconcileOwed) and gets the
 * final answer; nothing is built or broadcast again.
 */
async function settleAnswer(
  deps: HandlerServices,
  payload: X402Payload,
  requirements: X402Requirements,
  principal: Principal,
  clientAddress: string,
  read: DecodedX402,
): Promise<{ status: 200; body: X402SettleBody; headers: Record<string, string> }> {
  const network = String(requirements.network);
  let payer: string | undefined;
  try {
    const t = translate(payload, requirements, deps.networks, read);
    payer = t.payer;
    // Settle verifies on its own against THESE requirements (an earlier verify is never trusted), charges the
    // seller the payTo belongs to, and needs that seller's key for a URL that is not cataloged.
    const outcome = await deps.facilitator.settle({
      paymentPayload: t.paymentPayload,
      paymentRequirements: t.paymentRequirements,
      principal,
      clientAddress,
      answerPending: true,
    });
    return await settledAnswer(deps, payload, requirements, payer, outcome);
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    const f = failure(err, 'settle');
    return {
      status: 200,
      body: {
        success: false,
        errorReason: f.reason,
        errorMessage: f.message,
        transaction: '',
        network,
        ...(payer ? { payer } : {}),
      },
      headers: {},
    };
  }
}

/** The x402 answer of a settle that reached the ledger: settled (with the attestation), or settlement_pending. */
async function settledAnswer(
  deps: HandlerServices,
  payload: X402Payload,
  requirements: X402Requirements,
  payer: string | undefined,
  outcome: SettleOutcome,
): Promise<{ status: 200; body: X402SettleBody; headers: Record<string, string> }> {
  const network = String(requirements.network);
  const settled = outcome.status === 'settled';
  const attestation = settled ? await deps.receipts.sign(outcome.receipt) : null;
  // Issue #21: the Bazaar learns from the settled payment's `bazaar` extension (never throws).
  const observed = settled
    ? await deps.bazaar?.observeSettledPayment({
        network,
        payTo: String(requirements.payTo),
        payer: payer ?? '',
        resourceUrl: payload.resource?.url,
        bazaarExtension: payload.extensions?.bazaar,
        amount: String(requirements.amount),
        asset: String(requirements.asset),
        transaction: outcome.settlement.transactionHash,
        description: payload.resource?.description,
        mimeType: payload.resource?.mimeType,
        resourceInfo: payload.resource,
        extensionKeys: Object.keys(payload.extensions ?? {}),
      })
    : undefined;
  const outcomes = bazaarAtSettle(settled ? observed : payload.extensions?.bazaar ? 'pending' : undefined);
  const extensions: Record<string, unknown> = {
    ...outcomes,
    marketplace: {
      receiptId: outcome.receipt.id,
      paymentAttemptId: outcome.receipt.paymentAttemptId,
      evidence: outcome.receipt.evidence,
      ...(attestation ? { attestation } : {}),
    },
  };
  const base = {
    payer: payer ?? '',
    transaction: outcome.settlement.transactionHash,
    network: outcome.settlement.network,
    extensions,
  };
  const headers = extensionResponsesHeader(outcomes);
  if (settled)
    return {
      status: 200,
      body: {
        success: true,
        ...base,
        amount: String(requirements.amount),
        ...(outcome.settlement.ledger !== null ? { extra: { ledger: outcome.settlement.ledger } } : {}),
      },
      headers,
    };
  // Only when the RPC could not tell within the transaction's time bound: not final yet, the retry reconciles it.
  return {
    status: 200,
    body: {
      success: false,
      errorReason: SETTLEMENT_PENDING,
      errorMessage:
        "The ledger RPC did not answer within the transaction's time bound; settle the same payload again " +
        'for the final answer (nothing is submitted twice).',
      ...base,
    },
    headers,
  };
}

/**
 * The x402 tag: the x402 v2 facilitator API (`/x402/*`), translation only (../x402/translate.ts). verify and settle
 * run the same use cases as /v1/verify and /v1/settle, so attempts, settlements, receipts, replay protection and the
 * one-winner claim are
 * the same records and guarantees.
 */
export function x402Handlers(deps: HandlerServices): X402Handlers {
  return {
    async getSupportedKinds() {
      return { status: 200, body: supported(deps) };
    },

    async getFacilitatorDescription() {
      const facilitator = {
        url: '/x402',
        supported: '/x402/supported',
        verify: '/x402/verify',
        settle: '/x402/settle',
        discovery: '/x402/discovery/resources',
      };
      return { status: 200, body: { x402Version: X402_VERSION, facilitator, ...supported(deps) } };
    },

    async verifyPaymentPayload({ body, principal, clientAddress }) {
      // The payload's transaction is decoded once here; everything after reads that one decode.
      const payload = body.paymentPayload as unknown as X402Payload;
      const read = decodeX402(payload);
      // payment-identifier: looked up before anything is verified (400 / 409 in the error envelope).
      const caller = { principal, clientAddress };
      const idKey = paymentIdentifierKey(deps.paymentIdentifiers, 'verify', body, caller, read.payer);
      const stored = idKey ? await deps.paymentIdentifiers!.lookup(idKey) : null;
      if (stored) return stored as { status: 200; body: X402VerifyBody; headers: Record<string, string> };
      const answer = await verifyAnswer(deps, payload, body.paymentRequirements as X402Requirements, principal, read);
      if (idKey && answer.body.isValid) await deps.paymentIdentifiers!.remember(idKey, answer);
      return answer;
    },

    async settlePaymentPayload({ body, principal, clientAddress }) {
      const payload = body.paymentPayload as unknown as X402Payload;
      const read = decodeX402(payload);
      const caller = { principal, clientAddress };
      const idKey = paymentIdentifierKey(deps.paymentIdentifiers, 'settle', body, caller, read.payer);
      const stored = idKey ? await deps.paymentIdentifiers!.lookup(idKey) : null;
      if (stored) return stored as { status: 200; body: X402SettleBody; headers: Record<string, string> };
      const answer = await settleAnswer(
        deps,
        payload,
        body.paymentRequirements as X402Requirements,
        principal,
        clientAddress,
        read,
      );
      // Stored only once final and confirmed: a success (never settlement_pending; a failure is answered again as it
      // is).
      if (idKey && answer.body.success) await deps.paymentIdentifiers!.remember(idKey, answer);
      return answer;
    },

    async listBazaarResources({ query }) {
      // Issue #30: integers out of range are clamped, never refused (a non-integer is 400 by the contract).
      const { limit, offset } = clampPaging(query.limit, query.offset);
      const empty = { items: [], total: 0 };
      const page = deps.bazaar ? await deps.bazaar.list(bazaarFilters(query), offset, limit) : empty;
      return {
        status: 200,
        body: { x402Version: X402_VERSION, items: page.items, pagination: { limit, offset, total: page.total } },
      };
    },

    async searchBazaarResources({ query }) {
      const { limit } = clampPaging(query.limit, 0);
      const found = deps.bazaar
        ? await deps.bazaar.search(query.query, bazaarFilters(query), { cursor: query.cursor, limit })
        : { resources: [], partialResults: false, cursor: null, unappliedFilters: [] };
      const { cursor, ...rest } = found;
      return { status: 200, body: { x402Version: X402_VERSION, ...rest, pagination: { limit, cursor } } };
    },
  };
}

/** The x402 list/search filter parameters as the Bazaar's filters (`extensions` names one extension key). */
function bazaarFilters(q: {
  type?: 'http' | 'mcp';
  payTo?: string;
  scheme?: string;
  network?: string;
  extensions?: string;
}): BazaarFilters {
  return { type: q.type, payTo: q.payTo, scheme: q.scheme, network: q.network, extension: q.extensions };
}
