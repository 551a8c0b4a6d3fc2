import type { Sequelize } from 'sequelize';
import { QueryTypes } from 'sequelize';
import type { WorkerDefinition } from './job-system';
import type { AbuseMetrics } from '../metrics/abuse';
import { pgQuery } from '../data/pg-query';
import type { Logger } from '../logger';
import { IDEMPOTENCY_KEEP_HOURS } from '../domain/idempotency';

/** RETENTION_FAILED_ATTEMPTS_DAYS default: failed payment attempts are kept this long. */
export const DEFAULT_FAILED_ATTEMPTS_DAYS = 30;
/** Rows deleted per statement (short locks, bounded WAL per statement) and statements per table per run. */
const BATCH = 5_000;
const MAX_BATCHES = 200;
/** Row counts are exact up to this (count over a LIMIT, so a huge table costs a bounded scan). */
export const COUNT_CAP = 10_000_001;

/**
 * What the retention worker deletes, each once it has expired. Settlements, receipts, catalog history (resources,
 * versions, catalog events) and sellers are never deleted.
 */
export const RETAINED_TABLES = {
  /** Idempotency records after their replay window (24 hours). */
  idempotency_keys: `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE created_at < now() - make_interval(hours => ${IDEMPOTENCY_KEEP_HOURS}) LIMIT ${BATCH})`,
  /** Rate-limit counters of windows that have ended (expire is epoch milliseconds). */
  rate_limits: `DELETE FROM rate_limits WHERE key IN (SELECT key FROM rate_limits WHERE expire < (extract(epoch FROM now()) * 1000)::bigint LIMIT ${BATCH})`,
  /** Sign-up challenges once expired (used or not: a used one is kept until it expires, so a replay still reads as one). */
  seller_wallet_challenges: `DELETE FROM seller_wallet_challenges WHERE id IN (SELECT id FROM seller_wallet_challenges WHERE expires_at < now() LIMIT ${BATCH})`,
  /** Failed payment attempts (verification_failed) older than RETENTION_FAILED_ATTEMPTS_DAYS; they have no settlement. */
  payment_attempts: `DELETE FROM payment_attempts WHERE id IN (SELECT id FROM payment_attempts WHERE status = 'verification_failed' AND created_at < now() - make_interval(days => $1::int) LIMIT ${BATCH})`,
} as const;

/** Tables whose row count is a metric (db_table_rows): the bounded ones, and the ones kept forever (for growth). */
export const COUNTED_TABLES = [...Object.keys(RETAINED_TABLES), 'api_keys', 'sellers', 'resources', 'resource_versions', 'catalog_events', 'settlements', 'receipts', 'dead_letter_jobs'] as const;

/**
 * The retention worker (Agenda, every `every`, default 10 minutes): deletes expired rows in batches
 * (RETAINED_TABLES), counts them in retention_deleted_rows_total{table}, then sets db_table_rows{table} for
 * COUNTED_TABLES. Idempotent: a second run finds nothing more to delete. A run deletes at most
 * BATCH × MAX_BATCHES rows per table; the rest waits for the next run.
 */
export function retentionWorker(deps: { db: Sequelize; metrics: AbuseMetrics; logger: Logger; failedAttemptsDays?: number; every?: string }): WorkerDefinition<{ failedAttemptsDays?: number }> {
  return {
    name: 'retention-worker',
    every: deps.every ?? '10 minutes',
    concurrency: 1,
    maxRetries: 3,
    async run(data) {
      const days = data?.failedAttemptsDays ?? deps.failedAttemptsDays ?? DEFAULT_FAILED_ATTEMPTS_DAYS;
      const deleted: Record<string, number> = {};
      for (const [table, sql] of Object.entries(RETAINED_TABLES)) {
        let total = 0;
        for (let i = 0; i < MAX_BATCHES; i++) {
          const { rowCount: n } = await pgQuery(deps.db, sql, sql.includes('$1') ? [days] : []);
          total += n;
          if (n < BATCH) break;
        }
        deleted[table] = total;
        if (total > 0) deps.metrics.retentionDeleted.inc({ table }, total);
      }
      if (Object.values(deleted).some((n) => n > 0)) deps.logger.info('retention: expired rows deleted', deleted);
      for (const table of COUNTED_TABLES) {
        const [row] = await deps.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM ${table} LIMIT ${COUNT_CAP}) t`, { type: QueryTypes.SELECT });
        deps.metrics.tableRows.set({ table }, row.n);
      }
    },
  };
}
