/**
 * bench:verify — POST /v1/verify per second through HTTP, the service, the local network and the load generator
 * each in its OWN process (scripts/bench/processes.ts): the bench's embedded PostgreSQL, the local network
 * (server/src/ledger/local-network/cli.ts), the service (server/src/main.ts, configured by environment only) and the
 * stock @x402/stellar facilitator (scripts/bench/stock-facilitator.ts). Local simulation; loopback only.
 *
 * It prints, in order:
 *   1. full rate: a closed loop of BENCH_CONCURRENCY clients, verifies/s, p50/p95/p99, the service's peak RSS;
 *   2. half rate: an open loop at half the measured rate (or BENCH_HALF_RATE), p50/p95/p99 from the scheduled send;
 *   3. the baseline: the stock facilitator's verify of the stock exact payload (a signed transaction, simulated at
 *      the network), same concurrency, same network, same run;
 *   4. last line: the ratio of our rate to the stock rate.
 * Every payload is signed before its clock starts (each of ours is used once: verify records an attempt per
 * authorization; the stock facilitator keeps no state, so its pool is reused).
 *
 * Every verify carries what the seller SDK sends: the seller's API key and a fresh Idempotency-Key (BENCH_VERIFY_BARE=1
 * sends neither).
 *
 * Env: BENCH_SECONDS (10) per measured run, BENCH_VERIFY_REQUESTS (20000) most requests per run, BENCH_CONCURRENCY
 * (32), BENCH_BUYERS (40), BENCH_LEDGER_MS (5000), BENCH_HALF_RATE (half the measured rate), BENCH_PROFILE=1 (the
 * service under --cpu-prof, SQL statements counted with pg_stat_statements, ledger RPC calls counted by a proxy;
 * the figures are then slower than without it).
 */
import crypto from 'node:crypto';
import { Keypair } from '@stellar/stellar-sdk';
import { closedLoop, envNumber, httpClient, latencyLine, openLoop, type LoadResult } from './bench/load';
import { REPO_ROOT, keepFile, progress, runBench, sampleRss, startBenchDatabase, startNetworkProcess, startNodeProcess, startRpcCounter, startServiceProcess, onStop } from './bench/processes';
import { fundBuyers, signedVerifyBody, stockPayload, type StockRequirements, type VerifyBody } from './bench/payments';
import { seedSeller } from './bench/seed';
import { profileClockUs, summarizeCpuProfile } from './bench/cpu-profile';

const SECONDS = envNumber('BENCH_SECONDS', 10);
const REQUESTS = envNumber('BENCH_VERIFY_REQUESTS', 20_000);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 32);
const BUYERS = envNumber('BENCH_BUYERS', 40);
const LEDGER_MS = envNumber('BENCH_LEDGER_MS', 5000);
const WARMUP = Math.min(300, Math.ceil(REQUESTS / 10));
const PROFILE = process.env.BENCH_PROFILE === '1';
const BARE = process.env.BENCH_VERIFY_BARE === '1';
const AMOUNT = '0.01';
const STROOPS = 100_000n;

function report(label: string, r: LoadResult, extra = ''): void {
  console.log(`${label}: ${r.ok} ok, ${r.failed} failed in ${r.seconds.toFixed(2)} s = ${r.rate.toFixed(1)}/s${extra}`);
  console.log(`  latency ${latencyLine(r.latencies)}`);
  if (r.firstFailure) console.log(`  first failure: ${r.firstFailure}`);
}

/** The service's RSS: one process, or the sum over its processes (WEB_CONCURRENCY > 1) with the largest one. */
function rssText(r: { maxMiB: number; largestProcessMiB: number; processes: number }): string {
  return r.processes > 1 ? `${r.maxMiB.toFixed(0)} MiB over ${r.processes} processes (largest ${r.largestProcessMiB.toFixed(0)} MiB)` : `${r.maxMiB.toFixed(0)} MiB`;
}

async function main() {
  console.log(
    `bench:verify — local simulation, separate processes, ${CONCURRENCY} concurrent clients, ≤ ${SECONDS} s and ≤ ${REQUESTS} requests per run, ` +
      `${BARE ? 'no API key, no Idempotency-Key' : 'seller API key + Idempotency-Key on every request (as the seller SDK sends)'}${PROFILE ? ', PROFILE mode' : ''}`,
  );
  const db = await startBenchDatabase({ statements: PROFILE });
  const net = await startNetworkProcess({ ledgerCloseMs: LEDGER_MS });
  const usdc = net.assets.find((a) => a.code === 'USDC');
  if (!usdc) throw new Error('the local network has no USDC');
  const counter = PROFILE ? await startRpcCounter(net.rpcUrl) : null;

  // Seller (seeded in the database), its wallet with a USDC trustline, and funded buyers.
  const wallet = Keypair.random();
  await net.fund(wallet.publicKey());
  await net.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const seller = await seedSeller(db, { walletAddress: wallet.publicKey(), domain: 'bench.example.com' });
  progress(`funding ${BUYERS} buyers on the local network`);
  const buyers = await fundBuyers(net, BUYERS, '100000');

  const service = await startServiceProcess({ databaseUrl: db.url, rpcUrl: counter?.url ?? net.rpcUrl, assets: net.assets, cpuProfile: PROFILE });
  const api = httpClient(service.baseUrl);
  const created = await api.json<{ id: string }>(
    'POST',
    '/v1/resources',
    {
      sellerId: seller.sellerId,
      type: 'http',
      name: 'Bench resource',
      description: 'A paid endpoint for the benchmark',
      url: 'https://bench.example.com/v1/echo',
      routeTemplate: '/v1/echo',
      network: 'stellar:testnet',
      payTo: wallet.publicKey(),
      assetCode: usdc.code,
      assetIssuer: usdc.issuer,
      amount: AMOUNT,
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
      extensions: {},
    },
    { authorization: `Bearer ${seller.apiKey}` },
  );
  if (created.status !== 201) throw new Error(`creating the bench resource answered ${created.status}: ${JSON.stringify(created.body)}`);
  const resourceId = created.body.id;

  // Within the service's maxTimeoutSeconds bound (an authorization valid for more ledgers than that is refused), and
  // far beyond one run at BENCH_LEDGER_MS per ledger.
  const expiration = (await net.latestLedger()) + 250;
  const sign = async (n: number, label: string): Promise<VerifyBody[]> => {
    const out: VerifyBody[] = [];
    for (let i = 0; i < n; i++) {
      out.push(await signedVerifyBody({ passphrase: net.passphrase, asset: usdc, buyer: buyers[i % buyers.length], payTo: wallet.publicKey(), stroops: STROOPS, amount: AMOUNT, expiration, resourceId }));
      if ((i + 1) % 5000 === 0) progress(`  signed ${i + 1}/${n} ${label} payloads`);
    }
    return out;
  };
  progress(`signing ${WARMUP + REQUESTS} payloads`);
  const pool = await sign(WARMUP + REQUESTS, 'full-rate');
  // As the seller SDK calls it: the seller's API key and a fresh Idempotency-Key on every POST (BENCH_VERIFY_BARE=1:
  // neither, the cheapest public call).
  const headers = (): Record<string, string> => (BARE ? {} : { authorization: `Bearer ${seller.apiKey}`, 'idempotency-key': crypto.randomUUID() });
  let next = 0;
  const send = () => api.request('POST', '/v1/verify', pool[next++], headers());

  progress(`warming up (${WARMUP} verifies)`);
  const warm = await closedLoop({ concurrency: CONCURRENCY, maxRequests: WARMUP, maxSeconds: 60, send });
  if (warm.ok === 0) throw new Error(`no verify succeeded during warm-up: ${warm.firstFailure}`);
  await db.resetStatements();
  counter?.reset();

  // 1. Full rate.
  progress('measuring the full rate');
  const rss = sampleRss(service.pid);
  const fromUs = profileClockUs();
  const full = await closedLoop({ concurrency: CONCURRENCY, maxRequests: REQUESTS, maxSeconds: SECONDS, send });
  const toUs = profileClockUs();
  const fullRss = rss.stop();
  const statements = await db.statementCounts();
  const rpcCounts = counter?.counts() ?? {};
  const rpcMillis = counter?.millis() ?? {};

  // 2. Half rate, fresh payloads.
  const halfRate = envNumber('BENCH_HALF_RATE', Math.max(1, Math.floor(full.rate / 2)));
  const halfCount = Math.min(REQUESTS, Math.ceil(halfRate * SECONDS));
  progress(`signing ${halfCount} payloads for the half-rate run`);
  const halfPool = await sign(halfCount, 'half-rate');
  let nextHalf = 0;
  progress(`measuring at a fixed ${halfRate}/s`);
  const rssHalf = sampleRss(service.pid);
  const half = await openLoop({ rate: halfRate, maxRequests: halfCount, maxSeconds: SECONDS, send: () => api.request('POST', '/v1/verify', halfPool[nextHalf++], headers()) });
  const halfRss = rssHalf.stop();
  api.close();

  // Profile outputs, before the service stops.
  const profileFile = PROFILE ? await service.stop() : null;
  if (!PROFILE) await service.stop();

  // 3. The stock facilitator on the same network.
  const facilitatorKey = Keypair.random();
  await net.fund(facilitatorKey.publicKey());
  const stock = startNodeProcess('scripts/bench/stock-facilitator.ts', { name: 'stock facilitator', cwd: REPO_ROOT, env: { STOCK_RPC_URL: net.rpcUrl, STOCK_FACILITATOR_SECRET: facilitatorKey.secret() } });
  onStop(async () => void (await stock.stop()));
  const [, stockUrl] = await stock.waitForLine(/listening on (\S+)/, 60_000);
  const requirements: StockRequirements = { scheme: 'exact', network: 'stellar:testnet', asset: usdc.contractId, amount: String(STROOPS), payTo: wallet.publicKey(), maxTimeoutSeconds: 3600, extra: { areFeesSponsored: true } };
  progress(`building ${buyers.length} stock payloads (signed transactions, simulated at the network)`);
  const stockMaxLedger = (await net.latestLedger()) + 700;
  const stockPool: string[] = [];
  for (const b of buyers) stockPool.push(JSON.stringify({ paymentPayload: await stockPayload(net, b, requirements, stockMaxLedger), paymentRequirements: requirements }));
  const stockApi = httpClient(stockUrl);
  const isValid = (a: { status: number; text: string }) => a.status === 200 && a.text.includes('"isValid":true');
  let nextStock = 0;
  const stockSend = () => stockApi.request('POST', '/verify', stockPool[nextStock++ % stockPool.length]);
  progress('warming up the stock facilitator');
  await closedLoop({ concurrency: CONCURRENCY, maxRequests: Math.min(WARMUP, 100), maxSeconds: 30, send: stockSend, isOk: isValid });
  progress('measuring the stock facilitator');
  const rssStock = sampleRss(stock.pid);
  const base = await closedLoop({ concurrency: CONCURRENCY, maxRequests: REQUESTS, maxSeconds: SECONDS, send: stockSend, isOk: isValid });
  const stockRss = rssStock.stop();
  const stats = await stockApi.json<{ refusedLookups: number }>('GET', '/stats');
  stockApi.close();

  console.log('\n=== results (local simulation; the machine is shared, so figures vary with other load) ===');
  report(`verify, full rate (closed loop, ${CONCURRENCY} clients)`, full, `; service RSS peak ${rssText(fullRss)}`);
  report(`verify, half rate (open loop at ${halfRate}/s)`, half, `; ${half.late} sends late; service RSS peak ${rssText(halfRss)}`);
  report(`stock @x402/stellar facilitator verify (closed loop, ${CONCURRENCY} clients, ${stockPool.length} payloads reused)`, base, `; its RSS peak ${stockRss.maxMiB.toFixed(0)} MiB; ${stats.body.refusedLookups} Horizon lookups refused (loopback only)`);

  if (PROFILE) {
    const perVerify = (n: number) => (n / Math.max(1, full.ok + full.failed)).toFixed(2);
    console.log(`\n--- profile: per verify over the full-rate run (${full.ok + full.failed} requests) ---`);
    console.log(`SQL statements per verify: ${perVerify(statements.reduce((a, s) => a + s.calls, 0))}`);
    for (const s of statements.slice(0, 20)) console.log(`  ${perVerify(s.calls).padStart(6)} × ${s.meanMs.toFixed(3).padStart(7)} ms  ${s.query.replace(/\s+/g, ' ').slice(0, 150)}`);
    console.log(`ledger RPC calls per verify: ${perVerify(Object.values(rpcCounts).reduce((a, b) => a + b, 0))}`);
    for (const [m, n] of Object.entries(rpcCounts).sort((a, b) => b[1] - a[1])) console.log(`  ${perVerify(n).padStart(6)}  ${m}  (the network answered in ${((rpcMillis[m] ?? 0) / n).toFixed(2)} ms on average, seen from the counting proxy)`);
    if (profileFile) console.log(`\n${summarizeCpuProfile(profileFile, 30, { fromUs, toUs })}\n(the full-rate run only: profile clock ${fromUs}..${toUs} µs; whole profile kept in ${keepFile(profileFile, 'verify')})`);
  }

  console.log(`\nratio to the stock @x402/stellar facilitator (same network, same run): ${(full.rate / Math.max(base.rate, 1e-9)).toFixed(2)}× (${full.rate.toFixed(1)} vs ${base.rate.toFixed(1)} verifies/s)`);
}

if (require.main === module) runBench(main);
