import type { Sequelize } from 'sequelize';
import { DEFERRED_COMMIT, PgCoalescer, pgQuery } from './pg-query';
import { IDEMPOTENCY_KEEP_HOURS as KEEP_HOURS } from '../domain/idempotency';

/** A claim whose request never finished (a crashed process) is taken over after this long. */
const ABANDONED_SECONDS = 60;
const MAX_BATCH = 64;

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

/**
 * The claim's take-over rule, shared by the single-row and the set-based statement. The row lock of ON CONFLICT DO
 * UPDATE makes the take-over happen once when several requests race for it.
 */
const TAKE_OVER = `ON CONFLICT (scope, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, status_code = NULL, response_body = NULL, created_at = now()
         WHERE idempotency_keys.created_at < now() - make_interval(hours => $4::int)
            OR (idempotency_keys.status_code IS NULL AND idempotency_keys.created_at < now() -
              make_interval(secs => $5::int))`;

/**
 * The claim and store statements, coalesced; `deferCommit`: each commits with synchronous_commit off (DEFERRED_COMMIT,
 * pg-query.ts), for the operations that move no money (http/idempotency.ts decides which). Separate coalescers, so a
 * deferred and a durable record never share a statement.
 */
function coalescers(db: Sequelize, deferCommit: boolean) {
  const returning = deferCommit ? `, ${DEFERRED_COMMIT}` : '';
  const storeReturning = deferCommit ? ` RETURNING ${DEFERRED_COMMIT}` : '';
  const suffix = deferCommit ? '_deferred' : '';
  const claims = new PgCoalescer<ClaimParams, boolean>({
    async runOne(p) {
      const { rows } = await pgQuery(
        db,
        `INSERT INTO idempotency_keys (scope, key, request_hash) VALUES ($1, $2, $3)
       ${TAKE_OVER}
       RETURNING key${returning}`,
        [p.scope, p.key, p.requestHash, KEEP_HOURS, ABANDONED_SECONDS],
        `idempotency_claim${suffix}`,
      );
      return rows.length === 1;
    },
    async runMany(batch) {
      const { rows } = await pgQuery<{ scope: string; key: string }>(
        db,
        `INSERT INTO idempotency_keys (scope, key, request_hash)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
       ${TAKE_OVER}
       RETURNING scope, key${returning}`,
        [
          batch.map((p) => p.scope),
          batch.map((p) => p.key),
          batch.map((p) => p.requestHash),
          KEEP_HOURS,
          ABANDONED_SECONDS,
        ],
        `idempotency_claim_many${suffix}`,
      );
      const claimed = new Set(rows.map(rowKey));
      return batch.map((p) => claimed.has(rowKey(p)));
    },
    rowKey,
    maxBatch: MAX_BATCH,
  });
  const stores = new PgCoalescer<StoreParams, void>({
    runOne: async (p) =>
      void (await pgQuery(
        db,
        `UPDATE idempotency_keys SET status_code = $1, response_body = $2::jsonb
           WHERE scope = $3 AND key = $4${storeReturning}`,
        [p.status, p.body, p.scope, p.key],
        `idempotency_store${suffix}`,
      )),
    runMany: async (batch) => {
      await pgQuery(
        db,
        `UPDATE idempotency_keys AS k SET status_code = v.status_code, response_body = v.body::jsonb
           FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS v(scope, key, status_code, body)
           WHERE k.scope = v.scope AND k.key = v.key${storeReturning}`,
        [batch.map((p) => p.scope), batch.map((p) => p.key), batch.map((p) => p.status), batch.map((p) => p.body)],
        `idempotency_store_many${suffix}`,
      );
      return batch.map(() => undefined);
    },
    rowKey,
    maxBatch: MAX_BATCH,
  });
  return { claims, stores };
}

/**
 * The `Idempotency-Key` records (the IdempotencyStore port of http/idempotency.ts), keyed by (scope, key): a claim
 * inserts the key, or takes over one that has expired (older than KEEP_HOURS) or was abandoned (no answer after
 * ABANDONED_SECONDS). Query style: parameterised SQL through pgQuery (prepared statements): the claim is an INSERT on
 * the primary key with
 * a compare-and-set take-over, so it holds across server processes. On the path of every POST that carries a key,
 * the claims (and the stores) are coalesced across concurrent requests (PgCoalescer): those made during one
 * event-loop turn are one set-based statement, row for row the same as the single-row one, so a burst of POSTs costs
 * one round trip and one commit per turn instead of one per request.
 */
export function createIdempotencyRepository(db: Sequelize) {
  const durable = coalescers(db, false);
  const deferred = coalescers(db, true);
  const mode = (opts?: { deferCommit?: boolean }) => (opts?.deferCommit ? deferred : durable);

  return {
    claim: (scope: string, key: string, requestHash: string, opts?: { deferCommit?: boolean }): Promise<boolean> =>
      mode(opts).claims.call({ scope, key, requestHash }),
    async read(scope: string, key: string) {
      const { rows } = await pgQuery<{ request_hash: string; status_code: number | null; response_body: unknown }>(
        db,
        'SELECT request_hash, status_code, response_body FROM idempotency_keys WHERE scope = $1 AND key = $2',
        [scope, key],
        'idempotency_read',
      );
      const r = rows[0];
      return r ? { requestHash: r.request_hash, statusCode: r.status_code, responseBody: r.response_body } : null;
    },
    store: (
      scope: string,
      key: string,
      status: number,
      body: string,
      opts?: { deferCommit?: boolean },
    ): Promise<void> => mode(opts).stores.call({ scope, key, status, body }),
    async forget(scope: string, key: string): Promise<void> {
      await pgQuery(
        db,
        'DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2',
        [scope, key],
        'idempotency_forget',
      );
    },
  };
}
