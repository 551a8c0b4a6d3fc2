import client from 'prom-client';

/**
 * Abuse bounds and data retention (issue #19): admission per route class (in flight, waiting, shed), the rows the
 * retention worker deletes, and the row count of every table it bounds (plus the ones kept forever, for growth
 * alerts). Labels come from fixed sets: the class (payments, writes, reads) and the table names of
 * RETAINED_TABLES / COUNTED_TABLES in jobs/retention-worker.ts.
 */
export interface AbuseMetrics {
  inflight: client.Gauge<'class'>;
  waiting: client.Gauge<'class'>;
  shed: client.Counter<'class'>;
  retentionDeleted: client.Counter<'table'>;
  tableRows: client.Gauge<'table'>;
}

export function defineAbuseMetrics(registry: client.Registry): AbuseMetrics {
  const registers = [registry];
  return {
    inflight: new client.Gauge({
      name: 'api_admission_in_flight',
      help: 'Requests holding a database admission slot now, by route class (payments, writes, reads)',
      labelNames: ['class'],
      registers,
    }),
    waiting: new client.Gauge({
      name: 'api_admission_waiting',
      help: 'Requests waiting for an admission slot, by route class',
      labelNames: ['class'],
      registers,
    }),
    shed: new client.Counter({
      name: 'api_admission_shed_total',
      help: 'Requests answered 503 because their route class was full and its wait queue too',
      labelNames: ['class'],
      registers,
    }),
    retentionDeleted: new client.Counter({
      name: 'retention_deleted_rows_total',
      help: 'Rows deleted by the retention worker, by table',
      labelNames: ['table'],
      registers,
    }),
    tableRows: new client.Gauge({
      name: 'db_table_rows',
      help: 'Rows in a table (exact count, capped at 10,000,001), refreshed by the retention worker',
      labelNames: ['table'],
      registers,
    }),
  };
}
