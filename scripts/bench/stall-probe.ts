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
    if (Number.isFinite(value)) out.set(line.slice(0, space).replace(/,?environment="[^"]*"/, ''), value);
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

export interface StallProbe {
  /** Scrapes once (resetting the event-loop histogram): the window starts. */
  start(): Promise<void>;
  /** Scrapes again: one line naming the event loop's delay, GC pauses and jobs over the window. */
  stop(): Promise<string>;
}

export function stallProbe(baseUrl: string, operatorKey: string): StallProbe {
  const api = httpClient(baseUrl, 2);
  const scrape = async () => {
    const res = await api.request('GET', '/metrics', undefined, { authorization: `Bearer ${operatorKey}` });
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    return parse(res.text);
  };
  let before: Sample = new Map();
  return {
    async start() {
      before = await scrape();
    },
    async stop() {
      const after = await scrape();
      api.close();
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
      return `${loop}; GC pauses: ${gc || 'none'}; jobs completed: ${jobs || 'none'}`;
    },
  };
}
