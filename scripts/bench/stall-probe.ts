/**
 * What a latency tail waited on, read from the service's own /metrics (prom-client's default metrics, operator key)
 * around one run: the event loop's delay over the run (perf_hooks.monitorEventLoopDelay, which /metrics resets at each
 * scrape, so the scrape before the run starts the window) and the garbage collector's pauses by kind
 * (nodejs_gc_duration_seconds, differenced), plus the background jobs that ran in the window. A tail with a long
 * event-loop delay is a synchronous step or a collection in the process; a tail without one waited elsewhere (the
 * database pool, the network, the machine's other processes).
 */
import { httpClient } from './load';

type Sample = Map<string, number>;

function parse(text: string): Sample {
  const out: Sample = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const value = Number(line.slice(space + 1));
    const key = line
      .slice(0, space)
      .replace(/environment="[^"]*",?/, '')
      .replace(/,}$/, '}')
      .replace(/{}$/, '');
    if (Number.isFinite(value)) out.set(key, value);
  }
  return out;
}

const get = (s: Sample, key: string) => s.get(key) ?? 0;
const ms = (seconds: number) => `${(seconds * 1000).toFixed(1)} ms`;

/** The largest GC pause of a kind in the window, as the bucket bound it falls under (">10 s" style when beyond). */
function largestPause(before: Sample, after: Sample, kind: string): string {
  const bounds = [...after.keys()]
    .filter((k) => k.startsWith('nodejs_gc_duration_seconds_bucket{') && k.includes(`kind="${kind}"`))
    .map((k) => ({ k, le: Number(/le="([^"]+)"/.exec(k)?.[1] ?? 'NaN') }))
    .sort((a, b) => a.le - b.le);
  const total = get(after, `nodejs_gc_duration_seconds_count{kind="${kind}"}`);
  const totalBefore = get(before, `nodejs_gc_duration_seconds_count{kind="${kind}"}`);
  for (const { k, le } of bounds)
    if (get(after, k) - get(before, k) === total - totalBefore) return Number.isFinite(le) ? `≤ ${ms(le)}` : 'more';
  return 'unknown';
}

/** Observations of a histogram (all series whose key contains `match`) in the window, and how many were slower than
 * each bound (seconds, bucket bounds of the histogram). */
function slowShare(before: Sample, after: Sample, name: string, match: string, bounds: number[]): string {
  const count = (s: Sample, le: string) =>
    [...s.entries()]
      .filter(([k]) => k.startsWith(`${name}_bucket{`) && k.includes(match) && k.includes(`le="${le}"`))
      .reduce((sum, [, v]) => sum + v, 0);
  const total = count(after, '+Inf') - count(before, '+Inf');
  const over = bounds.map((b) => `${total - (count(after, String(b)) - count(before, String(b)))} over ${b * 1000} ms`);
  return `${total} observed, ${over.join(', ')}`;
}

/** The database's checkpoints and WAL flushes in the window (pg_stat_bgwriter / pg_stat_checkpointer, pg_stat_wal). */
export interface DatabaseCounters {
  query<T = Record<string, unknown>>(sql: string): Promise<T[]>;
}

async function databaseCounters(db: DatabaseCounters | undefined): Promise<Record<string, number>> {
  if (!db) return {};
  const one = async (sql: string) => (await db.query<Record<string, string>>(sql).catch(() => []))[0] ?? {};
  const checkpointer = await one(
    'SELECT num_timed + num_requested AS checkpoints, buffers_written AS buffers FROM pg_stat_checkpointer',
  );
  const bgwriter = checkpointer.checkpoints
    ? checkpointer
    : await one(
        'SELECT checkpoints_timed + checkpoints_req AS checkpoints, buffers_checkpoint AS buffers ' +
          'FROM pg_stat_bgwriter',
      );
  const wal = await one('SELECT wal_records AS records, wal_sync AS syncs FROM pg_stat_wal');
  // The service's connections (its pool: DATABASE_POOL_MAX): how many were open, and the newest one's start, so a
  // window can tell whether its requests waited for new connections (a pool emptied by its idle timeout).
  const conns = await one(
    `SELECT count(*) AS connections, coalesce(extract(epoch FROM max(backend_start)) * 1000, 0) AS newest ` +
      `FROM pg_stat_activity WHERE application_name = 'paid-api-marketplace'`,
  );
  return Object.fromEntries(
    Object.entries({ ...bgwriter, ...wal, ...conns }).map(([k, v]) => [k, Number(v)]),
  ) as Record<string, number>;
}

/**
 * The background jobs that ran in the window, each with its start and end in seconds from the window's start (Agenda
 * keeps each recurring job's last run in agenda_jobs), so a burst of slow requests can be set beside what ran then.
 */
async function jobRuns(db: DatabaseCounters | undefined, sinceMs: number): Promise<string> {
  if (!db) return '?';
  const since = Number(sinceMs) / 1000;
  const rows = await db
    .query<{ name: string; started: string; finished: string | null }>(
      `SELECT name, extract(epoch FROM last_run_at) * 1000 - ${sinceMs} AS started, ` +
        `extract(epoch FROM last_finished_at) * 1000 - ${sinceMs} AS finished FROM agenda_jobs ` +
        `WHERE last_run_at >= to_timestamp(${since}) ORDER BY last_run_at`,
    )
    .catch(() => []);
  const s = (v: string | null) => (v === null ? '…' : (Number(v) / 1000).toFixed(2));
  return rows.map((r) => `${r.name} ${s(r.started)}–${s(r.finished)} s`).join(', ') || 'none';
}

export interface StallProbe {
  /** Scrapes once (resetting the event-loop histogram): the window starts. */
  start(): Promise<void>;
  /** Scrapes again: one line naming the event loop's delay, GC pauses and jobs over the window. */
  stop(): Promise<string>;
}

export function stallProbe(baseUrl: string, operatorKey: string, db?: DatabaseCounters): StallProbe {
  const api = httpClient(baseUrl, 2);
  const scrape = async () => {
    const res = await api.request('GET', '/metrics', undefined, { authorization: `Bearer ${operatorKey}` });
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    return parse(res.text);
  };
  let before: Sample = new Map();
  let dbBefore: Record<string, number> = {};
  let startedAt = 0;
  return {
    async start() {
      dbBefore = await databaseCounters(db);
      before = await scrape();
      startedAt = Date.now();
    },
    async stop() {
      const after = await scrape();
      api.close();
      const dbAfter = await databaseCounters(db);
      const runs = await jobRuns(db, startedAt);
      const dbDiff = (k: string) => (k in dbAfter ? String(dbAfter[k] - (dbBefore[k] ?? 0)) : '?');
      const loop =
        `event-loop delay over the run: max ${ms(get(after, 'nodejs_eventloop_lag_max_seconds'))}, ` +
        `p99 ${ms(get(after, 'nodejs_eventloop_lag_p99_seconds'))}, ` +
        `mean ${ms(get(after, 'nodejs_eventloop_lag_mean_seconds'))}`;
      const gc = ['minor', 'major', 'incremental', 'weakcb']
        .map((kind) => {
          const n = get(after, `nodejs_gc_duration_seconds_count{kind="${kind}"}`);
          const n0 = get(before, `nodejs_gc_duration_seconds_count{kind="${kind}"}`);
          const sum = get(after, `nodejs_gc_duration_seconds_sum{kind="${kind}"}`);
          const sum0 = get(before, `nodejs_gc_duration_seconds_sum{kind="${kind}"}`);
          return n > n0 ? `${kind} ${n - n0} (${ms(sum - sum0)}, largest ${largestPause(before, after, kind)})` : null;
        })
        .filter(Boolean)
        .join(', ');
      const jobs = [...after.keys()]
        .filter((k) => k.startsWith('job_completed_total{'))
        .map((k) => ({ worker: /worker="([^"]+)"/.exec(k)?.[1], n: get(after, k) - get(before, k) }))
        .filter((j) => j.n > 0)
        .map((j) => `${j.worker} ${j.n}`)
        .join(', ');
      const verify = slowShare(before, after, 'facilitator_verify_duration_seconds', '', [0.05, 0.25]);
      const simulate = slowShare(
        before,
        after,
        'ledger_rpc_latency_seconds',
        'method="simulateTransaction"',
        [0.05, 0.25],
      );
      const mib = (k: string) => `${(get(after, k) / 2 ** 20).toFixed(0)} MiB`;
      const space = (name: string) => mib(`nodejs_heap_space_size_total_bytes{space="${name}"}`);
      const memory =
        `memory at the end: RSS ${mib('process_resident_memory_bytes')} = V8 heap ` +
        `${mib('nodejs_heap_size_total_bytes')} (new space ${space('new')}, old space ${space('old')}, code ` +
        `${space('code')}, large objects ${space('large_object')}; used ${mib('nodejs_heap_size_used_bytes')}) + ` +
        `external ${mib('nodejs_external_memory_bytes')} + the rest (code, stacks, native libraries, allocator)`;
      return (
        `${loop}; GC pauses: ${gc || 'none'}; jobs completed: ${jobs || 'none'} (their runs, s from the window's ` +
        `start: ${runs}); verify as the service times it ` +
        `(domain, from the decoded request to the answer): ${verify}; its simulateTransaction calls: ${simulate}; ` +
        `database: ${dbDiff('checkpoints')} checkpoints (${dbDiff('buffers')} buffers written), ` +
        `${dbDiff('records')} WAL records, ${dbDiff('syncs')} WAL syncs; the service's connections: ` +
        `${dbBefore.connections ?? '?'} open at the start, ${dbAfter.connections ?? '?'} at the end` +
        ((dbAfter.newest ?? 0) > (dbBefore.newest ?? 0)
          ? ' (some opened during the run); '
          : ' (none opened during the run); ') +
        `${memory}`
      );
    },
  };
}
