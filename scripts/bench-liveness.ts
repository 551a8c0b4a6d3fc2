/**
 * npm run bench:liveness — the liveness worker's load at 100,000 listings (issue #33), with its default settings
 * (DEFAULT_TRUST_SETTINGS: rate cap, concurrency, per-host gap, batches of 100 outcomes): probes per minute, the CPU
 * of the service process and of the database, the time a full cycle over BENCH_LIVENESS_LISTINGS takes at the
 * measured rate and, last, the ratio "cycle time ÷ 30 min" (target ≤ 1: "a listing that stops answering is demoted
 * within 30 minutes"). The probe target is one local HTTP server answering every host with a 402 (local simulation).
 *
 * One listing is cataloged through the API and cloned in SQL (one INSERT … SELECT generate_series per table) into
 * BENCH_LIVENESS_LISTINGS (100,000) listings on BENCH_LIVENESS_HOSTS (1,000) hosts, each already probed once and due
 * (the steady state; BENCH_LIVENESS_FRESH=1 starts from never probed); then one pass of BENCH_LIVENESS_SECONDS (60)
 * runs at BENCH_LIVENESS_RATE probes per minute (default: the service's default cap).
 */
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startEmbeddedDatabase } from '../server/src/data/embedded-database';
import { tempDir } from './bench/processes';
import { DEFAULT_TRUST_SETTINGS } from '../server/src/domain/trust/types';

const N = Number(process.env.BENCH_LIVENESS_LISTINGS ?? 100_000);
const HOSTS = Number(process.env.BENCH_LIVENESS_HOSTS ?? 1000);
const SECONDS = Number(process.env.BENCH_LIVENESS_SECONDS ?? 60);
const RATE = Number(process.env.BENCH_LIVENESS_RATE ?? DEFAULT_TRUST_SETTINGS.maxPerMinute);
const FRESH = process.env.BENCH_LIVENESS_FRESH === '1';

/** CPU seconds (user + system) of the processes descending from this one and named `comm` (Linux /proc). */
async function childCpuSeconds(comm: string): Promise<number> {
  const { readdir, readFile } = await import('node:fs/promises');
  const stats = new Map<number, { ppid: number; comm: string; cpu: number }>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = await readFile(`/proc/${entry}/stat`, 'utf8');
      const close = text.lastIndexOf(')');
      const fields = text.slice(close + 2).split(' ');
      stats.set(Number(entry), {
        ppid: Number(fields[1]),
        comm: text.slice(text.indexOf('(') + 1, close),
        cpu: (Number(fields[11]) + Number(fields[12])) / 100, // utime + stime, in clock ticks of 1/100 s
      });
    } catch {
      // the process ended meanwhile
    }
  }
  const mine = (pid: number): boolean => {
    for (let p = stats.get(pid)?.ppid, hops = 0; p && hops < 8; p = stats.get(p)?.ppid, hops++)
      if (p === process.pid) return true;
    return false;
  };
  let total = 0;
  for (const [pid, st] of stats) if (st.comm === comm && mine(pid)) total += st.cpu;
  return total;
}

async function main() {
  const pg = await startEmbeddedDatabase({
    dataDir: path.join(tempDir('bench-liveness-pg-'), 'data'),
    persistent: false,
  });
  process.env.TEST_ADMIN_DATABASE_URL = pg.adminUrl;
  const { startTestService } = await import('../server/test/support/test-service');
  const { signUpSeller, bearer, resourceInput } = await import('../server/test/support/fixtures');
  const { createSafeFetcher } = await import('../server/src/net');
  const { toStroops } = await import('../server/src/domain/amount');
  const { createTrustRepository } = await import('../server/src/data/trust-repository');
  const { createLivenessRunner } = await import('../server/src/domain/trust/liveness-runner');

  let payTo = '';
  let issuer = '';
  let answered = 0;
  const sellerServer = http.createServer((_req, res) => {
    answered += 1;
    const body = JSON.stringify({
      x402Version: 2,
      accepts: [
        {
          scheme: 'exact',
          network: 'stellar:testnet',
          amount: toStroops('0.01').toString(),
          payTo,
          maxTimeoutSeconds: 300,
          extra: { asset: { code: 'USDC', issuer } },
        },
      ],
    });
    res.writeHead(402, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => sellerServer.listen(0, '127.0.0.1', () => r()));
  const port = (sellerServer.address() as AddressInfo).port;
  const svc = await startTestService({
    runJobs: true,
    jobPollMs: 100,
    responseValidation: false,
    challengeLimit: { perClient: 100_000, perWallet: 100 },
    statementTimeoutMs: 0, // the 100k-row clone
    trust: { liveness: false },
  });
  try {
    const seller = await signUpSeller(svc.app, { domain: 'bench.example' });
    payTo = seller.wallet.publicKey();
    const input = resourceInput(seller, { amount: '0.01' });
    issuer = String(input.assetIssuer);
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send({
        ...input,
        url: `http://h0.bench.example:${port}/v0/forecast/{city}`,
        routeTemplate: '/v0/forecast/{city}',
      });
    if (res.status !== 201) throw new Error(`create failed ${res.status}`);
    const seed = (res.body.resource ?? res.body).id as string;
    for (;;) {
      const [[row]] = (await svc.db.query(
        `SELECT count(*)::int AS n FROM search_documents WHERE resource_id = '${seed}'`,
      )) as [Array<{ n: number }>, unknown];
      if (row.n === 1) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const columns = async (table: string) =>
      (
        (
          await svc.db.query(
            `SELECT column_name AS c FROM information_schema.columns WHERE table_name = '${table}' AND ` +
              `is_generated = 'NEVER' ORDER BY ordinal_position`,
          )
        )[0] as Array<{ c: string }>
      ).map((r) => r.c);
    const clone = async (table: string, key: string) => {
      const cols = await columns(table);
      const sel = cols.map((c) =>
        c === key
          ? `'res_' || lpad(g::text, 26, '0') AS ${c}`
          : c === 'url'
            ? `'http://h' || (g % ${HOSTS}) || '.bench.example:${port}/v' || g || '/forecast/{city}' AS url`
            : c === 'route_template'
              ? `'/v' || g || '/forecast/{city}'`
              : c,
      );
      await svc.db.query(
        `INSERT INTO ${table} (${cols.join(', ')}) SELECT ${sel.join(', ')} FROM ${table}, generate_series(1, ` +
          `${N - 1}) AS g WHERE ${key} = '${seed}'`,
      );
    };
    let t = Date.now();
    const steps: string[] = [];
    const step = async (name: string, fn: () => Promise<unknown>) => {
      const t0 = Date.now();
      await fn();
      steps.push(`${name} ${Date.now() - t0} ms`);
    };
    await step('resources', () => clone('resources', 'id'));
    await step('search documents', () => clone('search_documents', 'resource_id'));
    // Steady state: every listing probed once (live, its terms as listed), due now, oldest first.
    if (!FRESH)
      await step('liveness rows', () =>
        svc.db.query(
          `INSERT INTO resource_liveness (resource_id, host, live, reason, checked_at, next_check_at,
           consecutive_failures, latencies_ms, latency_p50_ms, latency_p99_ms, observed_pay_to, observed_amount)
         SELECT d.resource_id, url_host(d.url), true, NULL, now() - interval '6 minutes',
                now() - interval '1 minute' - (row_number() OVER (ORDER BY d.resource_id)) * interval '1 ms',
                0, '{3}', 3, 3, d.pay_to, d.amount FROM search_documents d;
         INSERT INTO resource_liveness_days (resource_id, day, probes, passed)
         SELECT resource_id, CAST(now() AS date), 1, 1 FROM search_documents;
         UPDATE search_documents SET live = true, owner_verified = true, uptime = 1;`,
        ),
      );
    await svc.db.query('ANALYZE resources; ANALYZE search_documents; ANALYZE resource_liveness');
    console.log(`seeded ${N} listings on ${HOSTS} hosts in bulk SQL in ${Date.now() - t} ms (${steps.join(', ')})`);

    // The worker's runner with its default settings, its repository timed per call.
    const repo = createTrustRepository(svc.db);
    const timing = { claimMs: 0, writeMs: 0, batches: 0, flagsChanged: 0, outlierMs: 0 };
    const timed = {
      ...repo,
      async claimDue(...a: Parameters<typeof repo.claimDue>) {
        const t0 = Date.now();
        const r = await repo.claimDue(...a);
        timing.claimMs += Date.now() - t0;
        return r;
      },
      async recordBatch(...a: Parameters<typeof repo.recordBatch>) {
        const t0 = Date.now();
        const r = await repo.recordBatch(...a);
        timing.writeMs += Date.now() - t0;
        timing.batches += 1;
        timing.flagsChanged += r.flagsChanged;
        return r;
      },
      async refreshPriceOutliers(...a: Parameters<typeof repo.refreshPriceOutliers>) {
        const t0 = Date.now();
        const r = await repo.refreshPriceOutliers(...a);
        timing.outlierMs += Date.now() - t0;
        return r;
      },
    };
    const settings = { ...DEFAULT_TRUST_SETTINGS, maxPerMinute: RATE };
    const runner = createLivenessRunner({
      repo: timed,
      settings,
      fetch: createSafeFetcher({
        allowInsecureForTests: true,
        allowPrivateAddressesForTests: true,
        readBodyOfStatuses: [200, 402],
        timeoutMs: 5000,
        lookup: async () => [{ address: '127.0.0.1', family: 4 }],
      }),
      contractId: () => null,
    });

    const cpu0 = process.cpuUsage();
    const db0 = await childCpuSeconds('postgres');
    t = Date.now();
    const result = await runner.pass(SECONDS * 1000);
    const wall = Date.now() - t;
    const cpu = process.cpuUsage(cpu0);
    const dbCpu = (await childCpuSeconds('postgres')) - db0;
    // The decoy-price refresh runs in a pass every outlierRefreshMs (not in this one: the runner is new): timed here
    // and charged to the pass pro rata.
    t = Date.now();
    await timed.refreshPriceOutliers(settings.outlierFactor, settings.outlierMinComparables);
    const outlierShareMs = (timing.outlierMs * SECONDS * 1000) / settings.outlierRefreshMs;
    const [[state]] = (await svc.db.query(
      `SELECT count(*) FILTER (WHERE checked_at IS NOT NULL)::int AS probed, count(*) FILTER (WHERE live)::int AS live,
              (SELECT sum(probes)::int FROM resource_liveness_days) AS counted FROM resource_liveness`,
    )) as [Array<{ probed: number; live: number; counted: number }>, unknown];

    const perMin = (result.written * 60_000) / (wall + outlierShareMs);
    const s = settings;
    const cycleMin = Math.max(s.intervalMs / 60_000, N / perMin);
    // A listing stops answering just after a probe: next probe within a cycle and a pass (the worker runs every
    // minute), first failure; its retry (a suspect, probed before overdue listings) after retryMs and a pass: dead.
    const demoteMin = cycleMin + 1 + s.retryMs / 60_000 + 1;
    const [l1, l5, l15] = (await import('node:os')).loadavg();
    console.log(
      `listings ${N} on ${HOSTS} hosts (${FRESH ? 'never probed' : 'steady state: each probed once, all due'}); ` +
        `default settings: rate cap ${RATE}/min, ${s.concurrency} in flight, one probe per host per ` +
        `${s.perHostIntervalMs} ms, outcomes written ${s.writeBatch} per statement (local simulation)`,
    );
    console.log(
      `pass: ${result.probed} probes (${result.live} live), ${result.written} written in ${timing.batches} ` +
        `batches (${result.refused} refused, ${result.deferred} deferred by the per-host bound) in ` +
        `${(wall / 1000).toFixed(1)} s; server answered ${answered}; rows probed ${state.probed}, day counters ` +
        `sum ${state.counted}`,
    );
    console.log(
      `time in the pass: claim ${timing.claimMs} ms, batch writes ${timing.writeMs} ms ` +
        `(${timing.batches ? Math.round(timing.writeMs / timing.batches) : 0} ms a batch; ${timing.flagsChanged} ` +
        `search documents' flags changed), decoy-price refresh over ${N} ${timing.outlierMs} ms (every ` +
        `${settings.outlierRefreshMs / 60_000} min: ${Math.round(outlierShareMs)} ms charged to this pass)`,
    );
    console.log(
      `CPU during the pass: service process ${(((cpu.user + cpu.system) / 1000 / wall) * 100).toFixed(1)} % of ` +
        `one core (user ${Math.round(cpu.user / 1000)} ms, system ${Math.round(cpu.system / 1000)} ms); ` +
        `database ${((dbCpu * 1000 * 100) / wall).toFixed(1)} % of one core (${dbCpu.toFixed(1)} s, ` +
        `its processes alive at the end)`,
    );
    console.log(`load average at the end: ${l1.toFixed(2)} ${l5.toFixed(2)} ${l15.toFixed(2)} (2 cores, shared)`);
    console.log(
      `probes/min: ${Math.round(perMin)} (written outcomes over the pass's wall time plus its share of the ` +
        `decoy-price refresh)`,
    );
    console.log(
      `full cycle over ${N} listings at that rate: ${cycleMin.toFixed(1)} min (the live interval, ` +
        `${s.intervalMs / 60_000} min, is the floor); worst-case demotion: cycle + 1 + retry ${s.retryMs / 60_000} ` +
        `+ 1 = ${demoteMin.toFixed(1)} min (demotion ÷ 30 min: ${(demoteMin / 30).toFixed(2)})`,
    );
    console.log(`cycle time ÷ 30 min: ${(cycleMin / 30).toFixed(2)} (target ≤ 1)`);
  } finally {
    await svc.stop();
    await pg.stop();
    await new Promise((r) => sellerServer.close(r));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
