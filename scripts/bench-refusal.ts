/**
 * bench:refusal — what refusing a hostile anonymous body costs the service, against what a bare Express 5 app spends
 * parsing the same body (issue #29 item 8: a refused anonymous request costs at most ~2× a bare `express.json()` parse
 * of the same body). The load generator (this process), the service (server/src/main.ts, configured by environment
 * only, with the bench's embedded PostgreSQL and the local network, each in its own process) and the bare app
 * (scripts/bench/bare-express.ts, `express.json()` with the service's body limit, answering a fixed `{"ok":true}`)
 * are SEPARATE processes (scripts/bench/processes.ts). Local simulation; loopback only.
 *
 * Every body goes to `POST /v1/verify` without an API key, as a stranger sends it, BENCH_REFUSAL_REQUESTS times
 * (closed loop, BENCH_CONCURRENCY clients), first to the service, then to the bare app. CPU per request (user +
 * system) is read from /proc/<pid>/stat of each process before and after its run; answer sizes are the bytes of
 * the last answer. The bodies:
 *   - unknown-properties: 30,000 unknown properties with short names (~240 KB, the review's body);
 *   - nested-unknown: the same 25,000 unknown properties inside `paymentPayload`;
 *   - deep-arrays: 20,000 nested arrays (`[[[...]]]`, 40 KB);
 *   - wide-array: `paymentPayload` holding an array of 100,000 numbers (~200 KB);
 *   - long-strings: the known fields, each a string of ~60,000 characters (~240 KB).
 * The figures come first, the ratio service ÷ bare per body next, and LAST the worst ratio (target ≤ 2).
 *
 * Env: BENCH_REFUSAL_REQUESTS (200) per body and process, BENCH_CONCURRENCY (4), BENCH_SECONDS (60) at most per run.
 */
import { closedLoop, envNumber, httpClient, type Answer } from './bench/load';
import {
  REPO_ROOT,
  cpuPerRequest,
  onStop,
  progress,
  runBench,
  startBenchDatabase,
  startNetworkProcess,
  startNodeProcess,
  startServiceProcess,
} from './bench/processes';

const REQUESTS = envNumber('BENCH_REFUSAL_REQUESTS', 200);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 4);
const SECONDS = envNumber('BENCH_SECONDS', 60);
const BODY_LIMIT_BYTES = 256 * 1024;
const TARGET = 2;

const manyFields = (n: number, prefix = '') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i.toString(36)}`, 1]));
const long = (c: string, n: number) => c.repeat(n);

const BODIES: Array<{ name: string; body: string }> = [
  { name: 'unknown-properties', body: JSON.stringify(manyFields(30_000)) },
  {
    name: 'nested-unknown',
    body: JSON.stringify({ paymentPayload: manyFields(25_000, 'x'), paymentRequirements: {} }),
  },
  { name: 'deep-arrays', body: `${'['.repeat(20_000)}${']'.repeat(20_000)}` },
  {
    name: 'wide-array',
    body: JSON.stringify({ paymentPayload: Array.from({ length: 100_000 }, () => 0), paymentRequirements: {} }),
  },
  {
    name: 'long-strings',
    body: JSON.stringify({
      resourceId: long('r', 60_000),
      paymentPayload: { x402Version: 2, payload: { transaction: long('A', 60_000) } },
      paymentRequirements: {
        scheme: 'exact',
        network: long('n', 30_000),
        payTo: long('G', 60_000),
        amount: long('1', 30_000),
      },
    }),
  },
];

interface Run {
  cpuMsPerRequest: number;
  status: number;
  answerBytes: number;
  requests: number;
}

async function measure(baseUrl: string, pid: number, body: string): Promise<Run> {
  const api = httpClient(baseUrl, CONCURRENCY * 2);
  let last: Answer | null = null;
  const send = async () => (last = await api.request('POST', '/v1/verify', body));
  // Warm-up (JIT, caches), not measured.
  await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: Math.min(20, REQUESTS),
    maxSeconds: SECONDS,
    send,
    isOk: () => true,
  });
  const r = await cpuPerRequest({ p: pid }, () =>
    closedLoop({ concurrency: CONCURRENCY, maxRequests: REQUESTS, maxSeconds: SECONDS, send, isOk: () => true }),
  );
  api.close();
  const answer = last as Answer | null;
  return {
    cpuMsPerRequest: r.cpuMs.p,
    status: answer?.status ?? 0,
    answerBytes: Buffer.byteLength(answer?.text ?? ''),
    requests: r.ok + r.failed,
  };
}

const kb = (n: number) =>
  n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;

async function main() {
  console.log(
    `bench:refusal — local simulation, separate processes, anonymous POST /v1/verify, ${REQUESTS} requests per ` +
      `body and process, ${CONCURRENCY} concurrent clients`,
  );
  const db = await startBenchDatabase();
  const net = await startNetworkProcess({ ledgerCloseMs: 5000 });
  const service = await startServiceProcess({
    databaseUrl: db.url,
    rpcUrl: net.rpcUrl,
    assets: net.assets,
    env: { BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES) },
  });
  const bare = startNodeProcess('scripts/bench/bare-express.ts', {
    name: 'bare express',
    cwd: REPO_ROOT,
    env: { BARE_EXPRESS_LIMIT: String(BODY_LIMIT_BYTES), BARE_EXPRESS_FIXED_ANSWER: '1' },
  });
  onStop(async () => void (await bare.stop()));
  const [, bareUrl] = await bare.waitForLine(/listening on (\S+)/, 60_000);
  progress(`bare Express 5 app in its own process (pid ${bare.pid}) at ${bareUrl}`);

  const rows: Array<{ name: string; bytes: number; service: Run; bare: Run }> = [];
  for (const { name, body } of BODIES) {
    progress(`${name}: ${kb(Buffer.byteLength(body))} body, the service then the bare app`);
    const s = await measure(service.baseUrl, service.pid, body);
    const b = await measure(bareUrl, bare.pid, body);
    rows.push({ name, bytes: Buffer.byteLength(body), service: s, bare: b });
  }
  const load = (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log('');
  console.log(
    `| body | size | service: status, answer, CPU/request | bare express.json(): status, answer, CPU/request | ratio |`,
  );
  console.log(`|---|---|---|---|---|`);
  for (const r of rows) {
    const ratio = r.service.cpuMsPerRequest / r.bare.cpuMsPerRequest;
    console.log(
      `| ${r.name} | ${kb(r.bytes)} | ${r.service.status}, ${kb(r.service.answerBytes)}, ` +
        `${r.service.cpuMsPerRequest.toFixed(2)} ms | ${r.bare.status}, ${kb(r.bare.answerBytes)}, ` +
        `${r.bare.cpuMsPerRequest.toFixed(2)} ms | ${ratio.toFixed(2)} |`,
    );
  }
  console.log(`load average at the end: ${load} (${(await import('node:os')).cpus().length} CPUs)`);
  const refusedOnly = rows.every((r) => r.service.status >= 400 && r.service.status < 500);
  if (!refusedOnly) console.log('WARNING: not every body was refused with a 4xx by the service');
  const worst = rows.reduce((a, r) =>
    r.service.cpuMsPerRequest / r.bare.cpuMsPerRequest > a.service.cpuMsPerRequest / a.bare.cpuMsPerRequest ? r : a,
  );
  const ratio = worst.service.cpuMsPerRequest / worst.bare.cpuMsPerRequest;
  console.log(
    `ratio: a refused anonymous request costs the service ${ratio.toFixed(2)}× the bare Express JSON parse of ` +
      `the same body (worst body: ${worst.name}; target ≤ ${TARGET}: ${ratio <= TARGET ? 'met' : 'NOT met'})`,
  );
}

runBench(main);
