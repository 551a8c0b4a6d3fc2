import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import { DomainError } from '../domain/errors';
import type { RouteMatch } from './operation-matcher';
import { markStage } from './server-timing';

/** The records the middleware keeps per (scope, key) (data/idempotency-repository.ts implements it). */
export interface IdempotencyStore {
  /** Claims the key for a request (its body's hash): true when this request is the one to run. `deferCommit`: the
   * record may commit without waiting for its WAL flush (DEFERRED_COMMIT_OPERATIONS). */
  claim(scope: string, key: string, requestHash: string, opts?: { deferCommit?: boolean }): Promise<boolean>;
  /** The stored first request: null status while it still runs. */
  read(
    scope: string,
    key: string,
  ): Promise<{ requestHash: string; statusCode: number | null; responseBody: unknown } | null>;
  /** Stores the answer (status and JSON body) of the request that claimed the key. */
  store(scope: string, key: string, status: number, body: string, opts?: { deferCommit?: boolean }): Promise<void>;
  /** Forgets the key (a 5xx answer is not kept: a retry runs again). */
  forget(scope: string, key: string): Promise<void>;
}

/**
 * `Idempotency-Key` on POST: the first request with a key runs and its response (status and body) is stored; a
 * retry with the same key and the same body replays it (header `Idempotent-Replayed: true`) without running again;
 * the same key with a different body, or while the first request is still running, answers 409
 * IDEMPOTENCY_CONFLICT. Keys are scoped to the caller (API key, or client IP without one) and kept 24 hours.
 * 5xx responses are not stored, so a retry after a server failure runs again. The records, the claim's take-over rule
 * and the coalescing of concurrent claims: data/idempotency-repository.ts.
 *
 * A secret is never stored: a response that carries one (the `apiKey` of `POST /v1/sellers`, the `secret` of
 * `POST /v1/sellers/{sellerId}/keys`, shown exactly once)
 * is recorded as a marker naming what was created, and a replay answers 409 IDEMPOTENCY_CONFLICT with that name
 * instead of the secret.
 */
const SECRET_FIELDS = ['apiKey', 'secret'] as const;
interface WithheldMarker {
  withheld: true;
  created: { field: string; id: string } | null;
}

function withholdSecrets(body: unknown): WithheldMarker | null {
  if (typeof body !== 'object' || body === null || !SECRET_FIELDS.some((f) => f in body)) return null;
  const seller = (body as { seller?: { id?: unknown } }).seller;
  if (typeof seller?.id === 'string') return { withheld: true, created: { field: 'sellerId', id: seller.id } };
  const key = (body as { id?: unknown }).id; // POST /v1/sellers/{sellerId}/keys: the key's id
  return { withheld: true, created: typeof key === 'string' ? { field: 'keyId', id: key } : null };
}

const isWithheld = (body: unknown): body is WithheldMarker =>
  typeof body === 'object' && body !== null && (body as { withheld?: unknown }).withheld === true;

/**
 * The operations whose Idempotency-Key records commit with synchronous_commit off (data/pg-query.ts DEFERRED_COMMIT):
 * the verifies, which reserve, submit and move nothing. A PostgreSQL crash (never a service crash) can lose the last
 * few hundred ms of these records; a retry then runs the verify again, or waits out the abandoned claim (409
 * IDEMPOTENCY_CONFLICT, Retry-After) and then does (server/README.md "Verify's commits"). Every other operation
 * (settle, catalog writes, keys) keeps its records' commits flushed.
 */
export const DEFERRED_COMMIT_OPERATIONS: ReadonlySet<string> = new Set(['verifyPayment', 'verifyPaymentPayload']);

export function idempotency(keys: IdempotencyStore): RequestHandler {
  return async (req, res, next) => {
    const key = req.get('idempotency-key');
    if (req.method !== 'POST' || !key) return next();
    const operationId = (res.locals.route as RouteMatch | null | undefined)?.operation?.operationId;
    const opts = { deferCommit: operationId !== undefined && DEFERRED_COMMIT_OPERATIONS.has(operationId) };
    const scope = `${(res.locals.idempotencyScope as string | undefined) ?? `ip:${req.ip}`}`;
    const requestHash = crypto
      .createHash('sha256')
      .update(`${req.method} ${req.originalUrl.split('?')[0]}\n${JSON.stringify(req.body ?? null)}`)
      .digest('hex');
    try {
      const claimed = await keys.claim(scope, key, requestHash, opts);
      if (!claimed) {
        const stored = await keys.read(scope, key);
        if (!stored)
          return next(new DomainError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key is being reused; retry'));
        if (stored.requestHash !== requestHash) {
          return next(
            new DomainError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key was used with a different request body'),
          );
        }
        if (stored.statusCode === null) {
          return next(
            new DomainError(
              'IDEMPOTENCY_CONFLICT',
              'A request with this Idempotency-Key is still in progress; retry later',
              [],
              { 'Retry-After': '1' },
            ),
          );
        }
        if (isWithheld(stored.responseBody)) {
          const created = stored.responseBody.created;
          return next(
            new DomainError(
              'IDEMPOTENCY_CONFLICT',
              `The first request with this Idempotency-Key ` +
                `succeeded${created ? ` (${created.field} ${created.id})` : ''}; its secret is shown only once ` +
                `and is not replayed`,
              created ? [{ field: created.field, message: created.id }] : [],
            ),
          );
        }
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(stored.statusCode).json(stored.responseBody);
        return;
      }
      const originalJson = res.json.bind(res);
      res.json = (body: unknown) => {
        markStage(res, 'idempotencyStore');
        const status = res.statusCode;
        const store =
          status < 500
            ? keys.store(scope, key, status, JSON.stringify(withholdSecrets(body) ?? body), opts)
            : keys.forget(scope, key);
        // The response waits for the record, so a retry that arrives right after it sees the stored answer.
        const answer = () => {
          markStage(res, 'write');
          originalJson(body);
        };
        store.then(answer, answer);
        return res;
      };
      next();
    } catch (err) {
      next(err);
    }
  };
}
