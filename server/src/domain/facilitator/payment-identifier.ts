import crypto from 'node:crypto';
import { DomainError } from '../errors';

/**
 * The x402 `payment-identifier` extension (coinbase/x402 specs/extensions/payment_identifier.md), facilitator side:
 * the client's `id` is an idempotency key for /x402/verify and /x402/settle.
 *
 * | Scenario | Answer |
 * |---|---|
 * | new id | processed normally; a final answer is stored |
 * | same id, same payload, same terms | the stored answer (status, body, headers), byte for byte |
 * | same id, another payload or other terms | 409 CONFLICT, nothing processed |
 * | `required: true` without an id, or an id outside 16-128 `[A-Za-z0-9_-]` | 400 INVALID_REQUEST |
 *
 * The id is looked up before anything is verified. A record is bound to the fingerprint of the terms (scheme,
 * network, asset, amount, payTo, resource URL) and the hash of the whole payload, and scoped to who asked (the
 * seller key's seller, the operator, or an anonymous client's address) and the payer named in the payload: one party
 * never reads another's answers, and no one can squat another payer's ids. Only answers that are final and that
 * passed the payer's signature are stored (verify `isValid: true`; settle `success: true`): refusals and
 * failures are recomputed. A settle answered `settlement_pending` is never stored (the retry must reconcile it).
 * Records live PAYMENT_ID_TTL_SECONDS and each scope keeps at most PAYMENT_IDS_PER_SCOPE (the oldest go first).
 */
export const PAYMENT_IDENTIFIER = 'payment-identifier';
export const PAYMENT_ID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
export const PAYMENT_ID_TTL_SECONDS = 24 * 3600;
export const PAYMENT_IDS_PER_SCOPE = 1000;

export type IdentifiedOperation = 'verify' | 'settle';

/** An answer as the x402 face gave it: HTTP status, JSON body and the headers it set. */
export interface StoredAnswer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export interface PaymentIdentifierKey {
  scope: string;
  id: string;
  operation: IdentifiedOperation;
  fingerprint: string;
  payloadHash: string;
}

/** The port (data/payment-identifier-repository.ts). */
export interface PaymentIdentifierStore {
  /** The record of (scope, id, operation) younger than `maxAgeSeconds`, or null. */
  find(
    scope: string,
    id: string,
    operation: IdentifiedOperation,
    maxAgeSeconds: number,
  ): Promise<(StoredAnswer & { fingerprint: string; payloadHash: string }) | null>;
  /** Stores the answer unless one is already stored (the first final answer wins); keeps the scope within
   * `maxPerScope`. */
  remember(key: PaymentIdentifierKey, answer: StoredAnswer, maxPerScope: number, maxAgeSeconds: number): Promise<void>;
}

/** The terms an id is bound to: scheme, network, asset, amount, payTo and resource URL. */
export interface IdentifiedTerms {
  scheme: string;
  network: string;
  asset: string;
  amount: string;
  payTo: string;
  resource: string | null;
}

const sha256 = (s: string) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');

/** JSON with object keys sorted, so one payload has one hash whatever order its keys came in. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export function termsFingerprint(t: IdentifiedTerms): string {
  return sha256(canonical([t.scheme, t.network, t.asset, t.amount, t.payTo, t.resource]));
}

export function payloadHashOf(payload: unknown): string {
  return sha256(canonical(payload));
}

/** The id the payload's `payment-identifier` extension carries, and whether the server required one. */
export function readPaymentIdentifier(extensions: unknown): { id: string | null; required: boolean } {
  const ext =
    extensions && typeof extensions === 'object'
      ? (extensions as Record<string, unknown>)[PAYMENT_IDENTIFIER]
      : undefined;
  if (ext === undefined || ext === null) return { id: null, required: false };
  const info = typeof ext === 'object' ? (ext as Record<string, unknown>).info : undefined;
  if (!info || typeof info !== 'object') throw invalid('the payment-identifier extension needs an info object');
  const { id, required } = info as Record<string, unknown>;
  if (required !== undefined && typeof required !== 'boolean')
    throw invalid('payment-identifier info.required must be a boolean');
  if (id === undefined || id === null) return { id: null, required: required === true };
  if (typeof id !== 'string' || !PAYMENT_ID_PATTERN.test(id))
    throw invalid('payment-identifier info.id must be 16-128 characters of A-Z, a-z, 0-9, - and _');
  return { id, required: required === true };
}

function invalid(message: string): DomainError {
  return new DomainError('INVALID_REQUEST', message, [
    { field: `paymentPayload.extensions.${PAYMENT_IDENTIFIER}`, message },
  ]);
}

/** Who asked, as a scope: the seller of the key, the operator, or the anonymous client's address; and the payer. */
export function identifierScope(
  caller: { sellerId?: string | null; operator?: boolean; clientAddress?: string },
  payer: string | undefined,
): string {
  const who = caller.sellerId
    ? `seller:${caller.sellerId}`
    : caller.operator
      ? 'operator'
      : `client:${caller.clientAddress ?? 'unknown'}`;
  return `${who}|payer:${payer ?? 'unknown'}`;
}

export function createPaymentIdentifiers(deps: {
  store: PaymentIdentifierStore;
  ttlSeconds?: number;
  maxPerScope?: number;
}) {
  const ttl = deps.ttlSeconds ?? PAYMENT_ID_TTL_SECONDS;
  const max = deps.maxPerScope ?? PAYMENT_IDS_PER_SCOPE;
  return {
    /**
     * The key of this request, or null when it carries no id. `required: true` without an id: 400. The extension is
     * read before anything else of the payment is checked.
     */
    keyOf(
      operation: IdentifiedOperation,
      extensions: unknown,
      scope: string,
      terms: IdentifiedTerms,
      payload: unknown,
    ): PaymentIdentifierKey | null {
      const { id, required } = readPaymentIdentifier(extensions);
      if (!id) {
        if (required)
          throw invalid(
            'the payment-identifier extension is required (info.required: true) but the payload carries no info.id',
          );
        return null;
      }
      return { scope, id, operation, fingerprint: termsFingerprint(terms), payloadHash: payloadHashOf(payload) };
    },

    /** The stored answer for the same id, payload and terms; 409 when the id answered another payload or terms. */
    async lookup(key: PaymentIdentifierKey): Promise<StoredAnswer | null> {
      const found = await deps.store.find(key.scope, key.id, key.operation, ttl);
      if (!found) return null;
      if (found.fingerprint !== key.fingerprint || found.payloadHash !== key.payloadHash) {
        throw new DomainError(
          'CONFLICT',
          `payment-identifier ${key.id} was already used for another payment (other payload or other terms); ` +
            `use a new id`,
          [{ field: `paymentPayload.extensions.${PAYMENT_IDENTIFIER}.info.id`, message: 'same id, different payload' }],
        );
      }
      return { status: found.status, body: found.body, headers: found.headers };
    },

    remember(key: PaymentIdentifierKey, answer: StoredAnswer): Promise<void> {
      return deps.store.remember(key, answer, max, ttl);
    },
  };
}

export type PaymentIdentifiers = ReturnType<typeof createPaymentIdentifiers>;
