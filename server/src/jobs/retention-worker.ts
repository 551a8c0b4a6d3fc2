import type { WorkerDefinition } from './job-system';
import type { AbuseMetrics } from '../metrics/abuse';
import type { Logger } from '../logger';

/** RETENTION_FAILED_ATTEMPTS_DAYS default: failed payment attempts are kept this long. */
export const DEFAULT_FAILED_ATTEMPTS_DAYS = 30;
/** The retention statements the worker runs (data/retention-repository.ts). */
export interface RetentionStore {
  tables: readonly string[];
  countedTables: readonly string[];
  deleteExpired(table: string, failedAttemptsDays: number): Promise<number>;
  countRows(table: string): Promise<number>;
}

/**
 * The retention worker (Agenda, every `every`, default 10 minutes): deletes expired rows in batches
 * (data/retention-repository.ts RETAINED_TABLES), counts them in retention_deleted_rows_total{table}, then sets
 * db_table_rows{table} for
 * COUNTED_TABLES. Idempotent: a second run finds nothing more to delete. A run deletes at most
 * BATCH × MAX_BATCHES rows per table; the rest waits for the next run.
 */
export function retentionWorker(deps: {
  store: RetentionStore;
  metrics: AbuseMetrics;
  logger: Logger;
  failedAttemptsDays?: number;
  every?: string;
}): WorkerDefinition<{ failedAttemptsDays?: number }> {
  return {
    name: 'retention-worker',
    every: deps.every ?? '10 minutes',
    concurrency: 1,
    maxRetries: 3,
    async run(data) {
      const days = data?.failedAttemptsDays ?? deps.failedAttemptsDays ?? DEFAULT_FAILED_ATTEMPTS_DAYS;
      const deleted: Record<string, number> = {};
      for (const table of deps.store.tables) {
        const total = await deps.store.deleteExpired(table, days);
        deleted[table] = total;
        if (total > 0) deps.metrics.retentionDeleted.inc({ table }, total);
      }
      if (Object.values(deleted).some((n) => n > 0)) deps.logger.info('retention: expired rows deleted', deleted);
      for (const table of deps.store.countedTables)
        deps.metrics.tableRows.set({ table }, await deps.store.countRows(table));
    },
  };
}
