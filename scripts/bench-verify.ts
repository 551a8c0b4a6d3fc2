/**
 * bench:verify — POST /v1/verify per second through HTTP, with the load generator (this process), the local network
 * (local-network/src/cli.ts), the service (server/src/main.ts, configured by environment only), the
 * bench's embedded PostgreSQL and each baseline in its OWN process (scripts/bench/processes.ts). Local simulation;
 * loopback only.
 *
 * Verify is the x402 `exact` Stellar rule list (issue #18): offline checks, then ONE simulateTransaction (enforce
 * mode) as the authority, then the accountable seller and one insert. The bench's payments satisfy it: the payTo is
 * the wallet of a signed-up seller whose cataloged resource the payment names, and the amount (0.01) is above the
 * facilitator's minimum (0.0001). In one run it measures, each against a baseline measured in the same run:
 *   1. valid verifies/s (closed loop, BENCH_CONCURRENCY clients) against the same RPC's raw simulateTransaction/s:
 *      the simulateTransaction JSON-RPC requests the service makes for the same payloads, sent straight to the
 *      local network with the same concurrency (target ≥ 0.8: the service is never the bottleneck);
 *   2. the same valid rate against the stock @x402/stellar facilitator (`ExactStellarScheme` behind a small HTTP
 *      server: scripts/bench/stock-facilitator.ts) verifying the stock exact payload (target ≥ 2×);
 *   3. invalid-signature verifies/s (a payload every offline rule passes but the ed25519 one; sent as hostile
 *      traffic is, without an API key or Idempotency-Key) against a bare Express 5 endpoint parsing the same JSON
 *      body and answering 200 (scripts/bench/bare-express.ts) (target ≥ 0.4);
 *   4. p99 at half the valid rate (open loop, latency from the scheduled send) against the raw simulation's p99 at
 *      the same rate, + 10 ms (target ≤);
 *   5. the service's peak RSS over the whole run (target ≤ 200 MB = 191 MiB, issue #31);
 *   6. with BENCH_PROCESSES="1,2" (the default), the valid closed-loop rate again with the service run as
 *      WEB_CONCURRENCY=2 (a node:cluster primary and two service processes, CPU and RSS summed over them), against
 *      the first (one process): what a second service process buys on this machine.
 * The service is the compiled JavaScript `npm start` runs (server/dist/main.js, built first if stale;
 * BENCH_SERVICE_RUNTIME=tsx runs server/src/main.ts through tsx instead).
 * The figures come first, the ratios to the baselines LAST. Every payload is signed before its clock starts (each
 * valid one is used once: verify records an attempt per authorization; simulations, invalid signatures and stock
 * payloads leave no state, so their pools are reused).
 *
 * Valid verifies carry what the seller SDK sends: the seller's API key and a fresh Idempotency-Key
 * (BENCH_VERIFY_BARE=1 sends neither).
 *
 * Env: BENCH_SECONDS (10) per measured run (7 runs), BENCH_VERIFY_REQUESTS (20000) most requests per run,
 * BENCH_CONCURRENCY (32), BENCH_BUYERS (40), BENCH_LEDGER_MS (5000), BENCH_HALF_RATE (half the measured rate),
 * BENCH_PROCESSES ("1,2": the service's WEB_CONCURRENCY for the full run, then for each extra valid closed-loop run),
 * BENCH_PROFILE=1 (the service under --cpu-prof, SQL statements counted with pg_stat_statements, the service's ledger
 * RPC calls counted by a proxy; the figures are then slower than without it).
 */
import crypto from 'node:crypto';
import { Keypair } from '@stellar/stellar-sdk';
import {
  closedLoop,
  envNumber,
  httpClient,
  openLoop,
  percentile,
  reportLoad,
  type Answer,
  type LoadResult,
} from './bench/load';
import {
  REPO_ROOT,
  cpuPerRequest,
  keepFile,
  progress,
  runBench,
  sampleRss,
  startBenchDatabase,
  startNetworkProcess,
  startNodeProcess,
  startRpcCounter,
  startServiceProcess,
  serviceProcessPids,
  onStop,
} from './bench/processes';
import { fundBuyers, stockPayload, type StockRequirements, type VerifyBody } from './bench/payments';
import { rawSimulateRequest, simulationSucceeded } from './bench/simulate';
import { seedSeller } from './bench/seed';
import { createBenchResource, verifySigner } from './bench/verify-resource';
import { profileClockUs, summarizeCpuProfile } from './bench/cpu-profile';
import { stallProbe } from './bench/stall-probe';
import { tailBreakdown, worstBySecond } from './bench/tail';

const SECONDS = envNumber('BENCH_SECONDS', 10);
const REQUESTS = envNumber('BENCH_VERIFY_REQUESTS', 20_000);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 32);
const BUYERS = envNumber('BENCH_BUYERS', 40);
const LEDGER_MS = envNumber('BENCH_LEDGER_MS', 5000);
const WARMUP = Math.min(300, Math.ceil(REQUESTS / 10));
const PROFILE = process.env.BENCH_PROFILE === '1';
const BARE = process.env.BENCH_VERIFY_BARE === '1';
/** BENCH_HALF_ONLY=1: warm up, then only the two half-rate runs (raw simulation, verify). */
const HALF_ONLY = process.env.BENCH_HALF_ONLY === '1';
/** The service runs with SERVER_TIMING=true and the half-rate verify run asks for a Server-Timing header on each
 * request (X-Server-Timing: 1), so its tail is split by stage (scripts/bench/tail.ts); the other runs do not ask (a
 * header lookup per request). BENCH_SERVER_TIMING=0: off. */
const SERVER_TIMING = process.env.BENCH_SERVER_TIMING !== '0';
const AMOUNT = '0.01';
const STROOPS = 100_000n;
/** The service's settlement time bound (SETTLEMENT_TX_TIMEOUT_SECONDS default): part of the simulated draft. */
const TX_TIMEOUT_SECONDS = 30;
/** Reused pools (no state is left by these requests). */
const REUSED = 1000;
const MIB_200MB = 200e6 / 2 ** 20;
const PROCESSES = (process.env.BENCH_PROCESSES ?? '1,2').split(',').map((p) => {
  const n = Number(p);
  if (!Number.isInteger(n) || n < 1 || n > 8) throw new Error('BENCH_PROCESSES: a list of 1..8, e.g. "1,2"');
  return n;
});

const report = reportLoad;

/** The service's RSS: one process, or the sum over its processes (WEB_CONCURRENCY > 1) with the largest one. */
function rssText(r: { maxMiB: number; largestProcessMiB: number; processes: number }): string {
  return r.processes > 1
    ? `${r.maxMiB.toFixed(0)} MiB over ${r.processes} processes (largest ${r.largestProcessMiB.toFixed(0)} MiB)`
    : `${r.maxMiB.toFixed(0)} MiB`;
}

type RssPeak = ReturnType<ReturnType<typeof sampleRss>['stop']>;

const met = (ok: boolean) => (ok ? 'met' : 'NOT met');

const serviceEnv = (processes: number): Record<string, string> => ({
  LEDGER_CLOSE_MS: String(LEDGER_MS),
  SETTLEMENT_TX_TIMEOUT_SECONDS: String(TX_TIMEOUT_SECONDS),
  WEB_CONCURRENCY: String(processes),
  ...(SERVER_TIMING ? { SERVER_TIMING: 'true' } : {}),
});

async function main() {
  console.log(
    `bench:verify — local simulation, separate processes, ${CONCURRENCY} concurrent clients, ≤ ${SECONDS} s and ` +
      `≤ ${REQUESTS} requests per run, ` +
      'valid verifies ' +
      (BARE
        ? 'with no API key, no Idempotency-Key'
        : 'with the seller API key + Idempotency-Key (as the seller SDK sends)') +
      (PROFILE ? ', PROFILE mode' : ''),
  );
  const db = await startBenchDatabase({ statements: PROFILE });
  const net = await startNetworkProcess({ ledgerCloseMs: LEDGER_MS });
  const usdc = net.assets.find((a) => a.code === 'USDC');
  if (!usdc) throw new Error('the local network has no USDC');
  const counter = PROFILE ? await startRpcCounter(net.rpcUrl) : null;

  // A signed-up seller (seeded in the database) whose wallet, with a USDC trustline, is every payment's payTo.
  const wallet = Keypair.random();
  await net.fund(wallet.publicKey());
  await net.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const seller = await seedSeller(db, { walletAddress: wallet.publicKey(), domain: 'bench.example.com' });
  progress(`funding ${BUYERS} buyers on the local network`);
  const buyers = await fundBuyers(net, BUYERS, '100000');

  const service = await startServiceProcess({
    databaseUrl: db.url,
    rpcUrl: counter?.url ?? net.rpcUrl,
    assets: net.assets,
    cpuProfile: PROFILE,
    env: serviceEnv(PROCESSES[0]),
  });
  const serviceRss = sampleRss(service.pid);
  // The RSS peak of each measured run, to say which traffic makes the whole run's peak.
  const phasePeaks: Array<[string, number]> = [];
  const phase = async <T>(label: string, run: () => Promise<T>): Promise<T> => {
    const rss = sampleRss(service.pid, 100);
    try {
      return await run();
    } finally {
      phasePeaks.push([label, rss.stop().maxMiB]);
    }
  };
  const api = httpClient(service.baseUrl);
  const resourceId = await createBenchResource(api, seller, wallet.publicKey(), usdc, AMOUNT);

  // A cataloged resource's authorization may be valid for at most 300 s: 60 ledgers at BENCH_LEDGER_MS = 5000 (+2 of
  // tolerance). Each pool is signed just before it is used, valid for 55 ledgers from then.
  const signer = verifySigner(net, usdc, buyers, {
    payTo: wallet.publicKey(),
    resourceId,
    amount: AMOUNT,
    stroops: STROOPS,
  });
  const sign = (n: number, label: string, corruptSignature = false): Promise<VerifyBody[]> =>
    signer(n, Math.max(2, Math.min(55, Math.floor((300_000 / LEDGER_MS) * 0.9))), corruptSignature, (i) => {
      if (i % 5000 === 0) progress(`  signed ${i}/${n} ${label} payloads`);
    });
  // As the seller SDK calls it: the seller's API key and a fresh Idempotency-Key on every POST (BENCH_VERIFY_BARE=1:
  // neither, the cheapest public call).
  const headers = (): Record<string, string> =>
    BARE ? {} : { authorization: `Bearer ${seller.apiKey}`, 'idempotency-key': crypto.randomUUID() };
  const verifyFrom = (pool: VerifyBody[], timed = false) => {
    let next = 0;
    const timing: Record<string, string> = timed && SERVER_TIMING ? { 'x-server-timing': '1' } : {};
    return () => api.request('POST', '/v1/verify', pool[next++], { ...headers(), ...timing });
  };

  // The raw baseline: the same simulations, straight to the network.
  const raw = httpClient(net.rpcUrl.replace(/\/rpc\/?$/, ''));
  const rpcPath = new URL(net.rpcUrl).pathname;
  const rawFrom = (bodies: VerifyBody[]) => {
    const requests = bodies
      .slice(0, REUSED)
      .map((b, i) => rawSimulateRequest(b, net.passphrase, TX_TIMEOUT_SECONDS, i + 1));
    let next = 0;
    return () => raw.request('POST', rpcPath, requests[next++ % requests.length]);
  };

  // The half-rate runs, fresh payloads: the raw simulation, then ours, at the same fixed rate, from the same generator.
  type HalfRuns = {
    simHalf: Awaited<ReturnType<typeof openLoop>>;
    half: Awaited<ReturnType<typeof openLoop>>;
    halfStalls: string;
  };
  const halfRateRuns = async (halfRate: number): Promise<HalfRuns> => {
    const halfCount = Math.min(REQUESTS, Math.ceil(halfRate * SECONDS));
    progress(`signing ${halfCount} payloads for the half-rate runs`);
    const halfPool = await sign(halfCount, 'half-rate');
    progress(`measuring raw simulateTransaction at a fixed ${halfRate}/s`);
    const simHalf = await openLoop({
      rate: halfRate,
      maxRequests: halfCount,
      maxSeconds: SECONDS,
      send: rawFrom(halfPool),
      isOk: simulationSucceeded,
    });
    progress(`measuring valid verifies at a fixed ${halfRate}/s`);
    const stalls = stallProbe(service.baseUrl, service.operatorApiKey, db);
    await stalls.start();
    const half = await phase('half rate', () =>
      openLoop({ rate: halfRate, maxRequests: halfCount, maxSeconds: SECONDS, send: verifyFrom(halfPool, true) }),
    );
    return { simHalf, half, halfStalls: await stalls.stop() };
  };
  const reportHalf = (halfRate: number, r: HalfRuns) => {
    report(
      `raw simulateTransaction at half rate (open loop at ${halfRate}/s)`,
      r.simHalf,
      `; ${r.simHalf.late} sends late`,
    );
    console.log(worstBySecond(r.simHalf.traces));
    report(`valid verify at half rate (open loop at ${halfRate}/s)`, r.half, `; ${r.half.late} sends late`);
    console.log(worstBySecond(r.half.traces));
    for (const line of tailBreakdown(r.half.traces)) console.log(line);
    console.log(`  the service during it (its /metrics): ${r.halfStalls}`);
  };
  const halfP99Ratio = (halfRate: number, r: HalfRuns) => {
    const simP99 = percentile(r.simHalf.latencies, 99);
    const halfP99 = percentile(r.half.latencies, 99);
    return (
      `p99 at half rate (${halfRate}/s): ${halfP99.toFixed(1)} ms vs raw simulation p99 ${simP99.toFixed(1)} ms + ` +
      `10 ms = ${(simP99 + 10).toFixed(1)} ms (target ≤: ${met(halfP99 <= simP99 + 10)})`
    );
  };

  progress(`signing ${WARMUP + REQUESTS} payloads`);
  const pool = await sign(WARMUP + REQUESTS, 'full-rate');
  const send = verifyFrom(pool);
  const rawSend = rawFrom(pool);

  progress(`warming up (${WARMUP} verifies, ${WARMUP} raw simulations)`);
  const warm = await closedLoop({ concurrency: CONCURRENCY, maxRequests: WARMUP, maxSeconds: 60, send });
  if (warm.ok === 0) throw new Error(`no verify succeeded during warm-up: ${warm.firstFailure}`);
  const warmRaw = await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: WARMUP,
    maxSeconds: 60,
    send: rawSend,
    isOk: simulationSucceeded,
  });
  if (warmRaw.ok === 0) throw new Error(`no raw simulation succeeded during warm-up: ${warmRaw.firstFailure}`);
  await db.resetStatements();
  counter?.reset();
  if (HALF_ONLY) {
    const halfRate = envNumber('BENCH_HALF_RATE', 140);
    const r = await halfRateRuns(halfRate);
    console.log('\n=== figures (local simulation; the machine is shared, so figures vary with other load) ===');
    reportHalf(halfRate, r);
    console.log(`\n=== ratio to the baseline measured in this run ===\n${halfP99Ratio(halfRate, r)}`);
    return;
  }

  // 1. The raw simulation rate, then ours, back to back.
  progress('measuring raw simulateTransaction at the network (closed loop)');
  const pids = { service: serviceProcessPids(service.pid), network: net.pid, 'load generator': process.pid };
  const sim = await cpuPerRequest(pids, () =>
    closedLoop({
      concurrency: CONCURRENCY,
      maxRequests: REQUESTS,
      maxSeconds: SECONDS,
      send: rawSend,
      isOk: simulationSucceeded,
    }),
  );
  progress('measuring valid verifies (closed loop)');
  const fromUs = profileClockUs();
  const full = await phase('valid closed loop', () =>
    cpuPerRequest(pids, () =>
      closedLoop({ concurrency: CONCURRENCY, maxRequests: REQUESTS, maxSeconds: SECONDS, send }),
    ),
  );
  const toUs = profileClockUs();
  const statements = await db.statementCounts();
  const rpcCounts = counter?.counts() ?? {};
  const rpcMillis = counter?.millis() ?? {};

  // 2. Invalid signatures, then the bare Express endpoint with the same bodies.
  progress(`signing ${REUSED} invalid-signature payloads`);
  const invalidPool = (await sign(REUSED, 'invalid-signature', true)).map((b) => JSON.stringify(b));
  const refusedSignature = (a: Answer) => a.status === 422 && a.text.includes('INVALID_SIGNATURE');
  let nextInvalid = 0;
  const invalidSend = () => api.request('POST', '/v1/verify', invalidPool[nextInvalid++ % invalidPool.length]);
  await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: WARMUP,
    maxSeconds: 30,
    send: invalidSend,
    isOk: refusedSignature,
  });
  progress('measuring invalid-signature verifies (closed loop)');
  const invalidFromUs = profileClockUs();
  const invalid = await phase('invalid-signature closed loop', () =>
    cpuPerRequest(pids, () =>
      closedLoop({
        concurrency: CONCURRENCY,
        maxRequests: REQUESTS,
        maxSeconds: SECONDS,
        send: invalidSend,
        isOk: refusedSignature,
      }),
    ),
  );
  const invalidToUs = profileClockUs();
  const bare = startNodeProcess('scripts/bench/bare-express.ts', { name: 'bare express', cwd: REPO_ROOT, env: {} });
  onStop(async () => void (await bare.stop()));
  const [, bareUrl] = await bare.waitForLine(/listening on (\S+)/, 60_000);
  const bareApi = httpClient(bareUrl);
  let nextBare = 0;
  const bareSend = () => bareApi.request('POST', '/v1/verify', invalidPool[nextBare++ % invalidPool.length]);
  await closedLoop({ concurrency: CONCURRENCY, maxRequests: WARMUP, maxSeconds: 30, send: bareSend });
  progress('measuring the bare Express 5 endpoint (closed loop)');
  const bareRss = sampleRss(bare.pid);
  const bareRun = await cpuPerRequest({ 'bare express': bare.pid, 'load generator': process.pid }, () =>
    closedLoop({ concurrency: CONCURRENCY, maxRequests: REQUESTS, maxSeconds: SECONDS, send: bareSend }),
  );
  const bareRssPeak = bareRss.stop();
  bareApi.close();
  await bare.stop();

  // 3. Half rate, fresh payloads: the raw simulation, then ours, at the same fixed rate.
  const halfRate = envNumber('BENCH_HALF_RATE', Math.max(1, Math.floor(full.rate / 2)));
  const halfRuns = await halfRateRuns(halfRate);
  api.close();
  raw.close();
  const rss = serviceRss.stop();

  // Profile outputs, before the service stops.
  const profileFile = PROFILE ? await service.stop() : null;
  if (!PROFILE) await service.stop();

  // 3b. The valid closed loop again with the service as WEB_CONCURRENCY = each further BENCH_PROCESSES count.
  const scaled: Array<{ processes: number; run: LoadResult & { cpuMs: Record<string, number> }; rss: RssPeak }> = [];
  for (const processes of PROCESSES.slice(1)) {
    const svc = await startServiceProcess({
      databaseUrl: db.url,
      rpcUrl: net.rpcUrl,
      assets: net.assets,
      env: serviceEnv(processes),
    });
    const svcRss = sampleRss(svc.pid);
    const svcApi = httpClient(svc.baseUrl);
    progress(`WEB_CONCURRENCY=${processes}: signing ${WARMUP + REQUESTS} payloads`);
    const scaledPool = await sign(WARMUP + REQUESTS, `WEB_CONCURRENCY=${processes}`);
    let nextScaled = 0;
    const scaledSend = () => svcApi.request('POST', '/v1/verify', scaledPool[nextScaled++], headers());
    await closedLoop({ concurrency: CONCURRENCY, maxRequests: WARMUP, maxSeconds: 60, send: scaledSend });
    progress(`measuring valid verifies with WEB_CONCURRENCY=${processes} (closed loop)`);
    const run = await cpuPerRequest(
      { service: serviceProcessPids(svc.pid), network: net.pid, 'load generator': process.pid },
      () => closedLoop({ concurrency: CONCURRENCY, maxRequests: REQUESTS, maxSeconds: SECONDS, send: scaledSend }),
    );
    svcApi.close();
    scaled.push({ processes, run, rss: svcRss.stop() });
    await svc.stop();
  }

  // 4. The stock facilitator on the same network.
  const facilitatorKey = Keypair.random();
  await net.fund(facilitatorKey.publicKey());
  const stock = startNodeProcess('scripts/bench/stock-facilitator.ts', {
    name: 'stock facilitator',
    cwd: REPO_ROOT,
    env: { STOCK_RPC_URL: net.rpcUrl, STOCK_FACILITATOR_SECRET: facilitatorKey.secret() },
  });
  onStop(async () => void (await stock.stop()));
  const [, stockUrl] = await stock.waitForLine(/listening on (\S+)/, 60_000);
  const requirements: StockRequirements = {
    scheme: 'exact',
    network: 'stellar:testnet',
    asset: usdc.contractId,
    amount: String(STROOPS),
    payTo: wallet.publicKey(),
    maxTimeoutSeconds: 3600,
    extra: { areFeesSponsored: true },
  };
  progress(`building ${buyers.length} stock payloads (signed transactions, simulated at the network)`);
  const stockMaxLedger = (await net.latestLedger()) + 600;
  const stockPool: string[] = [];
  for (const b of buyers)
    stockPool.push(
      JSON.stringify({
        paymentPayload: await stockPayload(net, b, requirements, stockMaxLedger),
        paymentRequirements: requirements,
      }),
    );
  const stockApi = httpClient(stockUrl);
  const isValid = (a: { status: number; text: string }) => a.status === 200 && a.text.includes('"isValid":true');
  let nextStock = 0;
  const stockSend = () => stockApi.request('POST', '/verify', stockPool[nextStock++ % stockPool.length]);
  progress('warming up the stock facilitator');
  await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: Math.min(WARMUP, 100),
    maxSeconds: 30,
    send: stockSend,
    isOk: isValid,
  });
  progress('measuring the stock facilitator');
  const rssStock = sampleRss(stock.pid);
  const base = await cpuPerRequest(
    { 'stock facilitator': stock.pid, network: net.pid, 'load generator': process.pid },
    () =>
      closedLoop({
        concurrency: CONCURRENCY,
        maxRequests: REQUESTS,
        maxSeconds: SECONDS,
        send: stockSend,
        isOk: isValid,
      }),
  );
  const stockRss = rssStock.stop();
  const stats = await stockApi.json<{ refusedLookups: number }>('GET', '/stats');
  stockApi.close();

  console.log('\n=== figures (local simulation; the machine is shared, so figures vary with other load) ===');
  report(
    `raw simulateTransaction at the local network (closed loop, ${CONCURRENCY} clients, ` +
      `${Math.min(REUSED, pool.length)} requests reused)`,
    sim,
  );
  report(`valid verify (closed loop, ${CONCURRENCY} clients)`, full);
  report(
    `invalid-signature verify, no API key (closed loop, ${CONCURRENCY} clients, ${invalidPool.length} bodies ` +
      `reused; ok = 422 INVALID_SIGNATURE)`,
    invalid,
  );
  report(
    `bare Express 5 endpoint, same bodies (closed loop, ${CONCURRENCY} clients)`,
    bareRun,
    `; its RSS peak ${bareRssPeak.maxMiB.toFixed(0)} MiB`,
  );
  reportHalf(halfRate, halfRuns);
  report(
    `stock @x402/stellar facilitator verify (closed loop, ${CONCURRENCY} clients, ${stockPool.length} payloads reused)`,
    base,
    `; its RSS peak ${stockRss.maxMiB.toFixed(0)} MiB; ${stats.body.refusedLookups} Horizon lookups refused ` +
      `(loopback only)`,
  );
  console.log(
    `service peak RSS over every run above (WEB_CONCURRENCY=${PROCESSES[0]}): ${rssText(rss)} (last sample ` +
      `${rss.lastMiB.toFixed(0)} MiB; peak of each measured run: ` +
      `${phasePeaks.map(([label, mib]) => `${label} ${mib.toFixed(0)} MiB`).join(', ')})`,
  );
  for (const s of scaled)
    report(
      `valid verify, service with WEB_CONCURRENCY=${s.processes} (closed loop, ${CONCURRENCY} clients)`,
      s.run,
      `; service peak RSS ${rssText(s.rss)}`,
    );

  if (PROFILE) {
    const perVerify = (n: number) => (n / Math.max(1, full.ok + full.failed)).toFixed(2);
    console.log(`\n--- profile: per valid verify over the closed-loop run (${full.ok + full.failed} requests) ---`);
    console.log(`SQL statements per verify: ${perVerify(statements.reduce((a, s) => a + s.calls, 0))}`);
    for (const s of statements.slice(0, 20))
      console.log(
        `  ${perVerify(s.calls).padStart(6)} × ${s.meanMs.toFixed(3).padStart(7)} ms  ` +
          `${s.query.replace(/\s+/g, ' ').slice(0, 150)}`,
      );
    console.log(`ledger RPC calls per verify: ${perVerify(Object.values(rpcCounts).reduce((a, b) => a + b, 0))}`);
    for (const [m, n] of Object.entries(rpcCounts).sort((a, b) => b[1] - a[1]))
      console.log(
        `  ${perVerify(n).padStart(6)}  ${m}  (the network answered in ${((rpcMillis[m] ?? 0) / n).toFixed(2)} ` +
          `ms on average, seen from the counting proxy)`,
      );
    if (profileFile) {
      console.log(
        `\n${summarizeCpuProfile(profileFile, 30, { fromUs, toUs })}\n(the valid closed-loop run only: profile ` +
          `clock ${fromUs}..${toUs} µs)`,
      );
      console.log(
        `\n--- profile of the invalid-signature run (${invalid.ok + invalid.failed} requests) ` +
          `---\n${summarizeCpuProfile(profileFile, 25, { fromUs: invalidFromUs, toUs: invalidToUs })}`,
      );
      console.log(`(whole profile kept in ${keepFile(profileFile, 'verify')})`);
    }
  }

  const halfP99Line = halfP99Ratio(halfRate, halfRuns);
  const ratioSim = full.rate / Math.max(sim.rate, 1e-9);
  const ratioStock = full.rate / Math.max(base.rate, 1e-9);
  const ratioBare = invalid.rate / Math.max(bareRun.rate, 1e-9);
  console.log('\n=== ratios to the baselines measured in this run (targets: issue #18) ===');
  console.log(
    `valid verifies/s ÷ raw simulateTransaction/s (same RPC, ${CONCURRENCY} clients): ${ratioSim.toFixed(2)} ` +
      `(${full.rate.toFixed(1)} vs ${sim.rate.toFixed(1)}/s; target ≥ 0.8: ${met(ratioSim >= 0.8)})`,
  );
  console.log(
    `valid verifies/s ÷ stock @x402/stellar facilitator verifies/s: ${ratioStock.toFixed(2)}× ` +
      `(${full.rate.toFixed(1)} vs ${base.rate.toFixed(1)}/s; target ≥ 2×: ${met(ratioStock >= 2)})`,
  );
  console.log(
    `invalid-signature verifies/s ÷ bare Express 5 JSON endpoint/s: ${ratioBare.toFixed(2)} ` +
      `(${invalid.rate.toFixed(1)} vs ${bareRun.rate.toFixed(1)}/s; target ≥ 0.4: ${met(ratioBare >= 0.4)})`,
  );
  console.log(halfP99Line);
  for (const s of scaled)
    console.log(
      `valid verifies/s, WEB_CONCURRENCY=${s.processes} ÷ WEB_CONCURRENCY=${PROCESSES[0]}: ` +
        `${(s.run.rate / Math.max(full.rate, 1e-9)).toFixed(2)} ` +
        `(${s.run.rate.toFixed(1)} vs ${full.rate.toFixed(1)}/s; ` +
        `service CPU per verify ${s.run.cpuMs.service.toFixed(2)} vs ${full.cpuMs.service.toFixed(2)} ms; no target: ` +
        `the service's processes share the cores with the network, PostgreSQL and the load generator)`,
    );
  console.log(
    `service peak RSS (WEB_CONCURRENCY=${PROCESSES[0]}): ${rssText(rss)} (target ≤ 200 MB = ` +
      `${MIB_200MB.toFixed(0)} MiB: ${met(rss.maxMiB <= MIB_200MB)})`,
  );
}

if (require.main === module) runBench(main);
