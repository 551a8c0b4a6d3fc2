import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Sequelize } from 'sequelize';
import { DomainError } from '../domain/errors';
import { PgCoalescer, pgQuery } from '../data/pg-query';

/**
 * `Idempotency-Key` on POST: the first request with a key runs and its response (status and body) is stored; a
 * retry with the same key and the same body replays it (header `Idempotent-Replayed: true`) without running again;
 * the same key with a different body, or while the first request is still running, answers 409
 * IDEMPOTENCY_CONFLICT. Keys are scoped to the caller (API key, or client IP without one) and kept 24 hours.
 * 5xx responses are not stored, so a retry after a server failure runs again. The claim is an INSERT on the
 * primary key, so it holds across server processes. On the path of every POST that carries a key: one statement to
 * claim (an expired or abandoned claim is taken over in the same statement) and one to store the answer, both plain
 * prepared statements (no Sequelize query building). Both are coalesced across concurrent requests (PgCoalescer):
 * the claims (and the stores) made during one event-loop turn are one set-based statement, row for row the same as
 * the single-row one, so a burst of POSTs costs one round trip and one commit per turn instead of one per request.
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

const isWithheld = (body: unknown): body is WithheldMarker => typeof body === 'object' && body !== null && (body as { withheld?: unknown }).withheld === true;
export const KEEP_HOURS = 24;
/** A claim whose request never finished (a crashed process) is taken over after this long. */
const ABANDONED_SECONDS = 60;

interface StoredKey {
  request_hash: string;
  status_code: number | null;
  response_body: unknown;
}

interface ClaimParams {
  scope: string;
  key: string;
  requestHash: string;
}
interface StoreParams {
  scope: string;
  key: string;
  status: number;
  body: string;
}
const rowKey = (p: { scope: string; key: string }) => `${p.scope}\u0000${p.key}`;
const MAX_BATCH = 64;

export function idempotency(db: Sequelize): RequestHandler {
  const claims = new PgCoalescer<ClaimParams, boolean>({
    runOne: (p) => claim(db, p.scope, p.key, p.requestHash),
    runMany: (batch) => claimMany(db, batch),
    rowKey,
    maxBatch: MAX_BATCH,
  });
  const stores = new PgCoalescer<StoreParams, void>({
    runOne: async (p) =>
      void (await pgQuery(db, 'UPDATE idempotency_keys SET status_code = $1, response_body = $2::jsonb WHERE scope = $3 AND key = $4', [p.status, p.body, p.scope, p.key], 'idempotency_store')),
    runMany: async (batch) => {
      await pgQuery(
        db,
        `UPDATE idempotency_keys AS k SET status_code = v.status_code, response_body = v.body::jsonb
           FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS v(scope, key, status_code, body)
           WHERE k.scope = v.scope AND k.key = v.key`,
        [batch.map((p) => p.scope), batch.map((p) => p.key), batch.map((p) => p.status), batch.map((p) => p.body)],
        'idempotency_store_many',
      );
      return batch.map(() => undefined);
    },
    rowKey,
    maxBatch: MAX_BATCH,
  });
  return async (req, res, next) => {
    const key = req.get('idempotency-key');
    if (req.method !== 'POST' || !key) return next();
    const scope = `${(res.locals.rateLimitKey as string | undefined) ?? `ip:${req.ip}`}`;
    const requestHash = crypto.createHash('sha256').update(`${req.method} ${req.originalUrl.split('?')[0]}\n${JSON.stringify(req.body ?? null)}`).digest('hex');
    try {
      const claimed = await claims.call({ scope, key, requestHash });
      if (!claimed) {
        const {
          rows: [stored],
        } = await pgQuery<StoredKey>(db, 'SELECT request_hash, status_code, response_body FROM idempotency_keys WHERE scope = $1 AND key = $2', [scope, key], 'idempotency_read');
        if (!stored) return next(new DomainError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key is being reused; retry'));
        if (stored.request_hash !== requestHash) {
          return next(new DomainError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key was used with a different request body'));
        }
        if (stored.status_code === null) {
          return next(new DomainError('IDEMPOTENCY_CONFLICT', 'A request with this Idempotency-Key is still in progress; retry later', [], { 'Retry-After': '1' }));
        }
        if (isWithheld(stored.response_body)) {
          const created = stored.response_body.created;
          return next(
            new DomainError(
              'IDEMPOTENCY_CONFLICT',
              `The first request with this Idempotency-Key succeeded${created ? ` (${created.field} ${created.id})` : ''}; its secret is shown only once and is not replayed`,
              created ? [{ field: created.field, message: created.id }] : [],
            ),
          );
        }
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(stored.status_code).json(stored.response_body);
        return;
      }
      const originalJson = res.json.bind(res);
      res.json = (body: unknown) => {
        const status = res.statusCode;
        const store =
          status < 500
            ? stores.call({ scope, key, status, body: JSON.stringify(withholdSecrets(body) ?? body) })
            : pgQuery(db, 'DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2', [scope, key], 'idempotency_forget');
        // The response waits for the record, so a retry that arrives right after it sees the stored answer.
        store.then(
          () => originalJson(body),
          () => originalJson(body),
        );
        return res;
      };
      next();
    } catch (err) {
      next(err);
    }
  };
}

/**
 * The claim, in one statement: a new key is inserted; an existing one is taken over (reset to this request, status
 * NULL) only when it has expired (older than KEEP_HOURS) or was abandoned (no answer after ABANDONED_SECONDS). The
 * row lock of ON CONFLICT DO UPDATE makes the take-over happen once when several requests race for it.
 */
async function claim(db: Sequelize, scope: string, key: string, requestHash: string): Promise<boolean> {
  const { rows } = await pgQuery(
    db,
    `INSERT INTO idempotency_keys (scope, key, request_hash) VALUES ($1, $2, $3)
       ON CONFLICT (scope, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, status_code = NULL, response_body = NULL, created_at = now()
         WHERE idempotency_keys.created_at < now() - make_interval(hours => $4::int)
            OR (idempotency_keys.status_code IS NULL AND idempotency_keys.created_at < now() - make_interval(secs => $5::int))
       RETURNING key`,
    [scope, key, requestHash, KEEP_HOURS, ABANDONED_SECONDS],
    'idempotency_claim',
  );
  return rows.length === 1;
}

/** claim() for several distinct keys in one statement: answers, per key in order, whether this request claimed it. */
async function claimMany(db: Sequelize, batch: ClaimParams[]): Promise<boolean[]> {
  const { rows } = await pgQuery<{ scope: string; key: string }>(
    db,
    `INSERT INTO idempotency_keys (scope, key, request_hash)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
       ON CONFLICT (scope, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, status_code = NULL, response_body = NULL, created_at = now()
         WHERE idempotency_keys.created_at < now() - make_interval(hours => $4::int)
            OR (idempotency_keys.status_code IS NULL AND idempotency_keys.created_at < now() - make_interval(secs => $5::int))
       RETURNING scope, key`,
    [batch.map((p) => p.scope), batch.map((p) => p.key), batch.map((p) => p.requestHash), KEEP_HOURS, ABANDONED_SECONDS],
    'idempotency_claim_many',
  );
  const claimed = new Set(rows.map(rowKey));
  return batch.map((p) => claimed.has(rowKey(p)));
}
