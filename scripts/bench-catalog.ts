/**
 * bench:catalog — catalog throughput and search-index freshness through HTTP, the service, the local network and
 * the load generator each in its own process (scripts/bench/processes.ts). Local simulation; loopback only.
 *
 * It prints:
 *   1. the baseline: POST /v1/discovery/validate per second (the same validation, nothing stored), closed loop;
 *   2. POST /v1/discovery/catalog per second sustained (every request a new resource), closed loop, p50/p95/p99;
 *   3. index freshness: once the index has caught up, a burst of BENCH_BURST catalog requests (8 concurrent); for
 *      each cataloged resource, the time from its 201 answer until GET /v1/discovery/search finds it (searched by a
 *      word only the burst's resources carry, every 100 ms, all pages, from the start of the burst: a resource is
 *      counted by the first poll that began after its 201): p50/p95/max, and how many never appeared;
 *   4. last line: the ratio of catalog requests/s to validate requests/s.
 * The seller is seeded straight into the bench's database (with an API key); its wallet has a USDC trustline.
 *
 * Env: BENCH_SECONDS (10) and BENCH_REQUESTS (3000) bound each rate run, BENCH_CONCURRENCY (8), BENCH_BURST (200),
 * BENCH_FRESHNESS_TIMEOUT_SECONDS (120), BENCH_PROFILE=1 (service under --cpu-prof: the top CPU costs of the sustained
 * catalog run, and SQL statements per catalog request over it, counted by pg_stat_statements).
 */
import crypto from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Keypair } from '@stellar/stellar-sdk';
import {
  closedLoop,
  envNumber,
  httpClient,
  latencyLine,
  percentile,
  type HttpClient,
  type LoadResult,
} from './bench/load';
import {
  keepFile,
  progress,
  runBench,
  sampleRss,
  startBenchDatabase,
  startNetworkProcess,
  startServiceProcess,
  type NetworkAsset,
} from './bench/processes';
import { profileClockUs, summarizeCpuProfile } from './bench/cpu-profile';
import { seedSeller, type SeededSeller } from './bench/seed';

const SECONDS = envNumber('BENCH_SECONDS', 10);
const REQUESTS = envNumber('BENCH_REQUESTS', 3000);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 8);
const BURST = envNumber('BENCH_BURST', 200);
const FRESHNESS_TIMEOUT = envNumber('BENCH_FRESHNESS_TIMEOUT_SECONDS', 120);
const PROFILE = process.env.BENCH_PROFILE === '1';

/** A lowercase word no English stemmer changes and nothing else in the index carries. */
const tag = () =>
  `zq${crypto
    .randomBytes(6)
    .toString('hex')
    .replace(/[0-9]/g, (d) => 'abcdefghij'[Number(d)])}`;

function resourceBody(seller: SeededSeller, usdc: NetworkAsset, n: number, word: string) {
  return {
    sellerId: seller.sellerId,
    resource: {
      type: 'http',
      name: `Weather ${word} ${n}`,
      description: `Hourly weather for a city, cataloged by the benchmark (${word})`,
      url: `https://${seller.domain}/v1/${word}/r${n}/{city}`,
      routeTemplate: `/v1/${word}/r${n}/{city}`,
      network: 'stellar:testnet',
      payTo: seller.walletAddress,
      assetCode: usdc.code,
      assetIssuer: usdc.issuer,
      amount: '0.01',
      inputSchema: {
        type: 'object',
        required: ['city'],
        properties: { city: { type: 'string', description: 'City name' } },
      },
      outputSchema: { type: 'object', properties: { temperatureC: { type: 'number' } } },
    },
  };
}

function report(label: string, r: LoadResult, extra = ''): void {
  console.log(`${label}: ${r.ok} ok, ${r.failed} failed in ${r.seconds.toFixed(2)} s = ${r.rate.toFixed(1)}/s${extra}`);
  console.log(`  latency ${latencyLine(r.latencies)}`);
  if (r.firstFailure) console.log(`  first failure: ${r.firstFailure}`);
}

/** Every resource id search finds for `word` (all pages). */
async function findAll(api: HttpClient, word: string): Promise<Set<string>> {
  const found = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < 50; page++) {
    const res = await api.json<{ resources?: Array<{ id: string }>; nextCursor?: string | null }>(
      'GET',
      `/v1/discovery/search?q=${word}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`search answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
    for (const r of res.body.resources ?? []) found.add(r.id);
    cursor = res.body.nextCursor ?? undefined;
    if (!cursor) break;
  }
  return found;
}

async function main() {
  console.log(
    `bench:catalog — local simulation, separate processes, ${CONCURRENCY} concurrent clients, ≤ ${SECONDS} s ` +
      `and ≤ ${REQUESTS} requests per run, burst of ${BURST}`,
  );
  const db = await startBenchDatabase({ statements: PROFILE });
  const net = await startNetworkProcess({ ledgerCloseMs: 5000 });
  const usdc = net.assets.find((a) => a.code === 'USDC')!;
  const wallet = Keypair.random();
  await net.fund(wallet.publicKey());
  await net.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const seller = await seedSeller(db, { walletAddress: wallet.publicKey(), domain: 'catalog.bench.example' });
  const service = await startServiceProcess({
    databaseUrl: db.url,
    rpcUrl: net.rpcUrl,
    assets: net.assets,
    cpuProfile: PROFILE,
  });
  const api = httpClient(service.baseUrl);
  const auth = { authorization: `Bearer ${seller.apiKey}` };
  const sustainedWord = tag();

  const probe = await api.json('POST', '/v1/discovery/catalog', resourceBody(seller, usdc, 0, sustainedWord), auth);
  if (probe.status !== 201) throw new Error(`catalog answered ${probe.status}: ${JSON.stringify(probe.body)}`);
  const validateOk = (a: { status: number; text: string }) => a.status === 200 && a.text.includes('"ok":true');

  progress('warming up');
  await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: 100,
    maxSeconds: 30,
    send: (i) => api.request('POST', '/v1/discovery/validate', resourceBody(seller, usdc, i, sustainedWord), auth),
    isOk: validateOk,
  });

  progress('measuring validate (baseline)');
  const validate = await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: REQUESTS,
    maxSeconds: SECONDS,
    send: (i) =>
      api.request('POST', '/v1/discovery/validate', resourceBody(seller, usdc, 100_000 + i, sustainedWord), auth),
    isOk: validateOk,
  });

  progress('measuring catalog, sustained');
  await db.resetStatements();
  const rss = sampleRss(service.pid);
  const fromUs = profileClockUs();
  const catalog = await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: REQUESTS,
    maxSeconds: SECONDS,
    send: (i) => api.request('POST', '/v1/discovery/catalog', resourceBody(seller, usdc, i + 1, sustainedWord), auth),
    isOk: (a) => a.status === 201,
  });
  const catalogRss = rss.stop();
  const toUs = profileClockUs();
  const statements = await db.statementCounts();

  progress('waiting for the index to catch up with the sustained run');
  const catchUpStart = performance.now();
  for (;;) {
    const [row] = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM catalog_events WHERE indexed_at IS NULL',
    );
    if (row.n === 0) break;
    if (performance.now() - catchUpStart > FRESHNESS_TIMEOUT * 1000)
      throw new Error(`the index still lags by ${row.n} events after ${FRESHNESS_TIMEOUT} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const catchUp = (performance.now() - catchUpStart) / 1000;

  // Freshness: a burst, and search polling from its start until every burst resource is found.
  const word = tag();
  progress(`burst of ${BURST} catalog requests (search word "${word}")`);
  const answeredAt = new Map<string, number>();
  const lags: number[] = [];
  const seen = new Set<string>();
  let burstDone = false;
  // Search polls from the start of the burst (every ~100 ms, all pages), so a resource's lag is measured from its
  // own 201, not from the end of the burst: a resource found by a poll that began before its 201 is not counted
  // until a later poll (the lag is never shorter than the truth).
  const poller = (async () => {
    const deadline = performance.now() + FRESHNESS_TIMEOUT * 1000;
    while (!(burstDone && seen.size >= answeredAt.size) && performance.now() < deadline) {
      const pollStart = performance.now();
      const found = await findAll(api, word);
      const now = performance.now();
      for (const id of found) {
        const at = answeredAt.get(id);
        if (seen.has(id) || at === undefined || at > pollStart) continue;
        seen.add(id);
        lags.push(Math.max(0, now - at));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })().then(
    () => null,
    (err: Error) => err, // re-thrown after the burst (not left unhandled meanwhile)
  );
  const burstStart = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < BURST) {
        const n = next++;
        const res = await api.json<{ resourceId?: string }>(
          'POST',
          '/v1/discovery/catalog',
          resourceBody(seller, usdc, n, word),
          auth,
        );
        if (res.status !== 201)
          throw new Error(`catalog answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
        const id = res.body.resourceId;
        if (!id) throw new Error(`catalog answer without a resource id: ${JSON.stringify(res.body).slice(0, 300)}`);
        answeredAt.set(id, performance.now());
      }
    }),
  );
  const burstSeconds = (performance.now() - burstStart) / 1000;
  burstDone = true;
  progress(`burst answered in ${burstSeconds.toFixed(2)} s; searching until every resource is findable`);
  const pollError = await poller;
  if (pollError) throw pollError;
  lags.sort((a, b) => a - b);
  api.close();
  const profileFile = PROFILE ? await service.stop() : null;

  console.log('\n=== results (local simulation; the machine is shared, so figures vary with other load) ===');
  report(`validate (baseline, ${CONCURRENCY} clients)`, validate);
  report(
    `catalog sustained (${CONCURRENCY} clients)`,
    catalog,
    `; service RSS peak ${catalogRss.maxMiB.toFixed(0)} MiB; the index caught up ${catchUp.toFixed(1)} s after the run`,
  );
  console.log(
    `index freshness after a burst of ${BURST} catalog requests (answered in ${burstSeconds.toFixed(2)} s): ` +
      (`${seen.size}/${answeredAt.size} findable by search; time from the 201 to findable p50 ` +
        `${(percentile(lags, 50) / 1000).toFixed(2)} s  `) +
      (`p95 ${(percentile(lags, 95) / 1000).toFixed(2)} s  max ` +
        `${((lags[lags.length - 1] ?? NaN) / 1000).toFixed(2)} s (searched every ~100 ms)`) +
      (seen.size < answeredAt.size ? `; ${answeredAt.size - seen.size} NOT findable after ${FRESHNESS_TIMEOUT} s` : ''),
  );
  if (PROFILE) {
    const per = (n: number) => (n / Math.max(1, catalog.ok + catalog.failed)).toFixed(2);
    console.log(
      `\n--- profile: per catalog request over the sustained run (${catalog.ok + catalog.failed} requests; ` +
        `indexing included) ---`,
    );
    console.log(`SQL statements per catalog request: ${per(statements.reduce((a, x) => a + x.calls, 0))}`);
    for (const x of statements.slice(0, 20))
      console.log(
        `  ${per(x.calls).padStart(6)} × ${x.meanMs.toFixed(3).padStart(8)} ms  ` +
          `${x.query.replace(/\s+/g, ' ').slice(0, 150)}`,
      );
    if (profileFile)
      console.log(
        `\n${summarizeCpuProfile(profileFile, 30, { fromUs, toUs })}\n(the sustained catalog run only; whole ` +
          `profile kept in ${keepFile(profileFile, 'catalog')})`,
      );
  }
  console.log(
    `\nratio to validate (same run): catalog ${catalog.rate.toFixed(1)}/s = ` +
      `${(catalog.rate / Math.max(validate.rate, 1e-9)).toFixed(2)}× validate ${validate.rate.toFixed(1)}/s`,
  );
}

runBench(main);
