import { QueryTypes, type Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { IDEMPOTENCY_KEEP_HOURS } from '../domain/idempotency';

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
  idempotency_keys:
    `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE created_at < now() - ` +
    `make_interval(hours => ${IDEMPOTENCY_KEEP_HOURS}) LIMIT ${BATCH})`,
  /** Rate-limit counters of windows that have ended (expire is epoch milliseconds). */
  rate_limits:
    `DELETE FROM rate_limits WHERE key IN (SELECT key FROM rate_limits WHERE expire < (extract(epoch FROM now()) ` +
    `* 1000)::bigint LIMIT ${BATCH})`,
  /** Sign-up challenges once expired (used or not: a used one is kept until it expires, so a replay still reads as
   * one). */
  seller_wallet_challenges:
    `DELETE FROM seller_wallet_challenges WHERE id IN (SELECT id FROM seller_wallet_challenges WHERE expires_at < ` +
    `now() LIMIT ${BATCH})`,
  /**
   * Failed payment attempts (verification_failed) and verified ones that expired unsettled (expired, issue #29) older
   * than RETENTION_FAILED_ATTEMPTS_DAYS; neither has a settlement.
   */
  payment_attempts:
    `DELETE FROM payment_attempts WHERE id IN (SELECT id FROM payment_attempts WHERE status IN ` +
    `('verification_failed', 'expired') AND created_at < now() - make_interval(days => $1::int) LIMIT ${BATCH})`,
} as const;

/** Tables whose row count is a metric (db_table_rows): the bounded ones, and the ones kept forever (for growth). */
export const COUNTED_TABLES = [
  ...Object.keys(RETAINED_TABLES),
  'api_keys',
  'sellers',
  'resources',
  'resource_versions',
  'catalog_events',
  'settlements',
  'receipts',
  'dead_letter_jobs',
] as const;

export type RetainedTable = keyof typeof RETAINED_TABLES;

/** The retention worker's statements: batched deletes of expired rows and capped row counts. */
export function createRetentionRepository(db: Sequelize) {
  return {
    tables: Object.keys(RETAINED_TABLES) as RetainedTable[],
    countedTables: COUNTED_TABLES,
    /** Deletes expired rows of `table`, at most BATCH × MAX_BATCHES per call; answers how many. */
    async deleteExpired(table: string, failedAttemptsDays: number): Promise<number> {
      const sql = RETAINED_TABLES[table as RetainedTable];
      if (!sql) throw new Error(`no retention rule for ${table}`);
      let total = 0;
      for (let i = 0; i < MAX_BATCHES; i++) {
        const { rowCount: n } = await pgQuery(db, sql, sql.includes('$1') ? [failedAttemptsDays] : []);
        total += n;
        if (n < BATCH) break;
      }
      return total;
    },
    /** The table's row count, exact up to COUNT_CAP. */
    async countRows(table: string): Promise<number> {
      if (!(COUNTED_TABLES as readonly string[]).includes(table)) throw new Error(`${table} is not counted`);
      const [row] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${table} LIMIT ${COUNT_CAP}) t`,
        { type: QueryTypes.SELECT },
      );
      return row.n;
    },
  };
}
