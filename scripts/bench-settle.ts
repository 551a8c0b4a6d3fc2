/**
 * Facilitator benchmark: settlements per ledger for N = 1, 4, 16, 64 channel accounts, with TWO service processes
 * sharing one channel pool through one database (issue #14 item 3, issue #31). Stellar admits one transaction per
 * source account per ledger, so with N channels the ideal is N settlements per ledger.
 *
 * Processes (scripts/bench/processes.ts): the bench's embedded PostgreSQL, the local network in its own process
 * (ledgers close every BENCH_LEDGER_MS, default 5000 ms, the pace of Stellar's networks), and per round two compiled
 * service processes (server/dist/main.js, as `npm start` runs it) given the SAME channel secrets
 * (STELLAR_TESTNET_CHANNEL_SECRETS): the database lease table is what keeps them from using one channel for two
 * in-flight transactions.
 *
 * The load looks like real traffic, so the service's fair-capacity bounds (issue #29) apply as they would in
 * production and are NOT loosened: every payment has its own payer (a payer holds one channel: one transfer in
 * flight), the payments are spread over BENCH_SELLERS sellers (default max(2, N/4)), and each seller's settles come
 * from its own client address (127.0.0.10 + k, as a seller's server calls settle; the service sees req.ip). A seller
 * and a client may hold half the pool (N/2) and queue 4 settles per process, so one seller and one client for
 * everything (what this bench did before) capped N = 16 and 64 at N/2 busy channels and had the rest refused
 * (503 settle_queue_per_client).
 *
 * Each round:
 *   1. throughput: verifies `BENCH_PER_CHANNEL x N` payments (default 3), then keeps `BENCH_OUTSTANDING` settles
 *      outstanding (default 2N: N holding channels, N waiting for the next free one; split evenly over the two
 *      services and the sellers), each answered once its settlement is final; the first ones are fired just after a
 *      ledger closed. Settlements per ledger = settled / the ledgers that held them, first to last;
 *   2. latency: `BENCH_LATENCY_SETTLES` (default 5) settles one at a time, each fired at a random point of a ledger
 *      (uniform delay of 0..1 ledger before it), timed from the request to the answer, which the service gives once
 *      the settlement is final on the ledger (settled): "settle -> settled".
 * Local simulation: real XDR, signatures and ledger rules.
 *
 * Prints per N the settlements per ledger (and how many each ledger held), the channel turnaround (median time a
 * channel sat free between the final answer of its transaction and the pending record of its next one, and median
 * time in flight), the CPU seconds of each process during the burst, the settle -> settled latency, and last the
 * ratio to the ideal N with the target (>= 0.9).
 * BENCH_CHANNELS (default "1,4,16,64") overrides the rounds; BENCH_PROFILE=1 runs the services under --cpu-prof and
 * prints where their CPU went during the burst.
 */
import fs from 'node:fs';
import { postFrom } from './bench/load';
import { Keypair, xdr } from '@stellar/stellar-sdk';
import {
  keepFile,
  progress,
  runBench,
  startBenchDatabase,
  startNetworkProcess,
  startServiceProcess,
  type BenchDatabase,
  type NetworkProcess,
  type ServiceProcess,
} from './bench/processes';
import { channelSecrets, fundBuyers, signedVerifyBody } from './bench/payments';
import { seedSeller, type SeededSeller } from './bench/seed';
import { profileClockUs, summarizeCpuProfile } from './bench/cpu-profile';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const postOnce = postFrom;

async function post(
  baseUrl: string,
  path: string,
  body: unknown,
  apiKey?: string,
  localAddress = '127.0.0.1',
): Promise<{ status: number; body: Record<string, any> }> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await postOnce(localAddress, `${baseUrl}${path}`, body, apiKey);
    } catch (err) {
      // A connection reset before the request reached a handler (a loaded machine): a few more tries, backing off.
      if (attempt >= 5) throw err;
      await sleep(200 * (attempt + 1));
    }
  }
}

const median = (xs: number[]) => quantile(xs, 0.5);
function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** CPU seconds (user + system) used so far by a process; with `children`, plus every process whose parent it is. */
const TICK = 100; // USER_HZ on Linux
function cpuSeconds(pid: number, children = false): number {
  const read = (p: number | string) => {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / TICK };
    } catch {
      return null;
    }
  };
  let total = read(pid)?.cpu ?? 0;
  if (children) {
    for (const p of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(p)) continue;
      const s = read(p);
      if (s && s.ppid === pid) total += s.cpu;
    }
  }
  return total;
}

/**
 * Mainnet's and testnet's ledger-wide Soroban limits (network settings validators vote on; values as Stellar Lab's
 * Network Limits page lists them, fetched from the live networks: stellar/laboratory src/constants/networkLimits.ts,
 * and https://developers.stellar.org/docs/networks/resource-limits-fees "Ledger-wide limits").
 */
const LEDGER_LIMITS = { txsSizeBytes: 266_240, writeEntries: 1_000, writeBytes: 286_720 } as const;

/**
 * What one settlement transaction of this run takes of a ledger's Soroban limits, measured on the envelopes the
 * local network recorded (real XDR: the size is what a real network would count; the local network's instruction
 * and byte metering are its own, so only the envelope size and the footprint's entry count are quoted).
 */
async function networkCeiling(net: NetworkProcess, hashes: string[]): Promise<string> {
  const sizes: number[] = [];
  const writeEntries: number[] = [];
  for (const h of hashes.slice(-9)) {
    const tx = await net.rpc<{ envelopeXdr?: string }>('getTransaction', { hash: h });
    if (!tx.envelopeXdr) continue;
    sizes.push(Buffer.from(tx.envelopeXdr, 'base64').length);
    const env = xdr.TransactionEnvelope.fromXDR(tx.envelopeXdr, 'base64');
    const inner = env.switch().name === 'envelopeTypeTxFeeBump' ? env.feeBump().tx().innerTx().v1() : env.v1();
    const data = inner.tx().ext().value() as xdr.SorobanTransactionData | undefined;
    if (data) writeEntries.push(data.resources().footprint().readWrite().length);
  }
  if (sizes.length === 0) return 'network ceiling: no settled transaction to measure';
  const size = median(sizes);
  const rw = median(writeEntries);
  return (
    `network ceiling (real networks, not simulated here): a settlement transaction is ${size} bytes of XDR ` +
    `(median of ${sizes.length}) writing ${rw} ledger entries; a ledger holds at most ` +
    `${LEDGER_LIMITS.txsSizeBytes.toLocaleString('en')} bytes of Soroban transactions (${Math.floor(
      LEDGER_LIMITS.txsSizeBytes / size,
    )} such settles) and ${LEDGER_LIMITS.writeEntries} written entries (${Math.floor(
      LEDGER_LIMITS.writeEntries / Math.max(1, rw),
    )}), for the whole network, shared with every other Soroban transaction`
  );
}

/**
 * Samples the bench database's busy connections (pg_stat_activity) every 100 ms until stopped: what the services'
 * statements were doing during the burst (running, waiting for a lock and on which statement, idle inside an open
 * transaction), as shares of the samples. Evidence of where a settle's database time goes.
 */
function sampleDatabaseWaits(db: BenchDatabase): { stop(): Promise<string> } {
  const tally = new Map<string, number>();
  let samples = 0;
  let busy = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const rows = await db.query<{ state: string; wait: string | null; q: string }>(
        `SELECT state, wait_event_type || ':' || wait_event AS wait,
                left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 70) AS q
           FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`,
      );
      samples++;
      for (const r of rows) {
        busy++;
        const what =
          r.state === 'active' ? (r.wait?.startsWith('Lock') ? `waiting for a lock (${r.wait})` : 'running') : r.state;
        const key = `${what}: ${r.q}`;
        tally.set(key, (tally.get(key) ?? 0) + 1);
      }
      await sleep(100);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const top = [...tally.entries()].sort((a, b) => b[1] - a[1]).slice(0, 6);
      return (
        `database during the burst (${samples} samples of pg_stat_activity, on average ` +
        `${(busy / Math.max(1, samples)).toFixed(1)} busy connections): ` +
        top.map(([k, n]) => `${((100 * n) / Math.max(1, busy)).toFixed(0)} % ${k}`).join(' | ')
      );
    },
  };
}

interface BenchSeller extends SeededSeller {
  /** The address its server calls settle from (the client the service sees). */
  clientAddress: string;
}

runBench(async () => {
  const rounds = (process.env.BENCH_CHANNELS ?? '1,4,16,64').split(',').map(Number);
  const perChannel = Number(process.env.BENCH_PER_CHANNEL ?? 3);
  const latencySettles = Number(process.env.BENCH_LATENCY_SETTLES ?? 5);
  const ledgerMs = Number(process.env.BENCH_LEDGER_MS ?? 5000);
  const profile = process.env.BENCH_PROFILE === '1';
  const db = await startBenchDatabase({ name: 'bench_settle' });
  const net = await startNetworkProcess({ ledgerCloseMs: ledgerMs });
  const usdc = net.assets.find((a) => a.code === 'USDC') ?? net.assets[0];
  const [{ setting: pgData }] = await db.query<{ setting: string }>(
    `SELECT setting FROM pg_settings WHERE name = 'data_directory'`,
  );
  const postmaster = Number(fs.readFileSync(`${pgData}/postmaster.pid`, 'utf8').split('\n')[0]);

  // Sellers, each with its own wallet (a USDC trustline: the payTo of its payments) and its own client address.
  const sellers: BenchSeller[] = [];
  const sellersFor = async (count: number): Promise<BenchSeller[]> => {
    while (sellers.length < count) {
      const k = sellers.length;
      const wallet = Keypair.random();
      await net.faucet(wallet.publicKey(), 'USDC', '0.0000001');
      const seeded = await seedSeller(db, {
        walletAddress: wallet.publicKey(),
        domain: `bench-settle-${k}.example.com`,
      });
      sellers.push({ ...seeded, clientAddress: `127.0.${1 + Math.floor(k / 200)}.${10 + (k % 200)}` });
    }
    return sellers.slice(0, count);
  };

  const results: Array<{ n: number; perLedger: number }> = [];
  const settledHashes: string[] = [];
  let ceilingPrinted = false;
  const latencies: number[] = [];
  console.log(
    `settle with 2 compiled service processes sharing one channel pool, local network at ${ledgerMs} ms ledgers ` +
      `(local simulation)`,
  );
  for (const n of rounds) {
    const secrets = (await channelSecrets(net, n)).join(',');
    const sellerCount = Number(process.env.BENCH_SELLERS ?? Math.max(2, Math.ceil(n / 4)));
    const outstanding = Number(process.env.BENCH_OUTSTANDING ?? 2 * n);
    const roundSellers = await sellersFor(sellerCount);
    // Each service holds about half the channels: its database pool (DATABASE_POOL_MAX) is sized to them, so the
    // settles holding channels do not queue for connections (BENCH_DB_POOL_MAX overrides; 10 is the service default).
    const poolMax = process.env.BENCH_DB_POOL_MAX ?? String(Math.min(40, Math.max(10, Math.ceil(n / 2) + 4)));
    // A settlement transaction's time bound (settle waits at most this plus a grace, then answers a final outcome):
    // 120 s unless BENCH_SETTLE_TX_TIMEOUT_SECONDS says otherwise (FACILITATOR_CONFIRM_WAIT_MS is retired).
    const txTimeout = process.env.BENCH_SETTLE_TX_TIMEOUT_SECONDS ?? '120';
    const env = {
      STELLAR_TESTNET_CHANNEL_SECRETS: secrets,
      SETTLEMENT_TX_TIMEOUT_SECONDS: txTimeout,
      LEDGER_CLOSE_MS: String(ledgerMs),
      DATABASE_POOL_MAX: poolMax,
    };
    const services: ServiceProcess[] = [];
    for (let i = 0; i < 2; i++)
      services.push(
        await startServiceProcess({
          databaseUrl: db.url,
          rpcUrl: net.rpcUrl,
          assets: net.assets,
          env,
          cpuProfile: profile,
        }),
      );
    let window: { fromUs: number; toUs: number } | undefined;
    try {
      const resourceIds: string[] = [];
      for (const seller of roundSellers) {
        const resource = await post(
          services[0].baseUrl,
          '/v1/resources',
          {
            sellerId: seller.sellerId,
            type: 'http',
            name: `Bench resource ${n}`,
            description: 'A paid endpoint for the settle benchmark',
            url: `https://${seller.domain}/v1/echo/${n}`,
            routeTemplate: `/v1/echo/${n}`,
            network: 'stellar:testnet',
            payTo: seller.walletAddress,
            assetCode: usdc.code,
            assetIssuer: usdc.issuer,
            amount: '0.01',
            inputSchema: { type: 'object' },
            outputSchema: { type: 'object' },
            extensions: {},
          },
          seller.apiKey,
        );
        if (resource.status !== 201) throw new Error(`resource: ${resource.status} ${JSON.stringify(resource.body)}`);
        resourceIds.push(resource.body.id as string);
      }
      const count = n * perChannel;
      progress(
        `N=${n}: funding ${count + latencySettles} buyers and verifying their payments (${sellerCount} sellers, ` +
          `${outstanding} settles outstanding)`,
      );
      const buyers = await fundBuyers(net, count + latencySettles, '1');
      const expiration = (await net.latestLedger()) + Math.floor(300_000 / Math.max(ledgerMs, 1000)) - 5;
      /** Slot j of the closed loop: seller j mod S, service floor(j / S) mod 2 (each seller's load on both). */
      const sellerOf = (j: number) => j % sellerCount;
      const serviceOf = (j: number) => Math.floor(j / sellerCount) % 2;
      const settles: Array<{
        body: { paymentAttemptId: string; paymentPayload: unknown; resourceId: string };
        seller: number;
      }> = new Array(buyers.length);
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < buyers.length) {
            const i = next++;
            const k = sellerOf(i % outstanding);
            const seller = roundSellers[k];
            const body = await signedVerifyBody({
              passphrase: net.passphrase,
              asset: usdc,
              buyer: buyers[i],
              payTo: seller.walletAddress,
              stroops: 100_000n,
              amount: '0.01',
              expiration,
              resourceId: resourceIds[k],
            });
            let v = await post(services[i % 2].baseUrl, '/v1/verify', body, seller.apiKey);
            // On a loaded machine the service may find the network's RPC slow for a moment (503): try again.
            for (let tries = 1; v.status === 503 && tries < 10; tries++) {
              await sleep(1000);
              v = await post(services[i % 2].baseUrl, '/v1/verify', body, seller.apiKey);
            }
            if (v.status !== 200) throw new Error(`verify: ${v.status} ${JSON.stringify(v.body)}`);
            settles[i] = {
              body: {
                paymentAttemptId: v.body.paymentAttemptId,
                paymentPayload: body.paymentPayload,
                resourceId: resourceIds[k],
              },
              seller: k,
            };
          }
        }),
      );
      const burst = settles.slice(0, count);
      const single = settles.slice(count);

      // 1. Throughput: `outstanding` settles in flight, each replaced when answered; started just after a close.
      const before = await net.latestLedger();
      while ((await net.latestLedger()) === before) await sleep(20);
      const cpuBefore = {
        services: services.map((s) => cpuSeconds(s.pid)),
        network: cpuSeconds(net.pid),
        postgres: cpuSeconds(postmaster, true),
      };
      const firstLedger = await net.latestLedger();
      const started = performance.now();
      const startedEpochMs = Date.now();
      window = { fromUs: profileClockUs(), toUs: 0 };
      const waits = sampleDatabaseWaits(db);
      const answers: Array<{ status: number; body: Record<string, any>; ms: number }> = [];
      let nextSettle = 0;
      await Promise.all(
        Array.from({ length: Math.min(outstanding, burst.length) }, async (_, j) => {
          while (nextSettle < burst.length) {
            const i = nextSettle++;
            const s = burst[i];
            const seller = roundSellers[s.seller];
            const t0 = performance.now();
            const a = await post(services[serviceOf(j)].baseUrl, '/v1/settle', s.body, undefined, seller.clientAddress);
            answers.push({ ...a, ms: performance.now() - t0 });
          }
        }),
      );
      const ids = burst.map((s) => s.body.paymentAttemptId);
      for (let i = 0; i < 600; i++) {
        const [open] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM settlements WHERE status = 'pending' AND payment_attempt_id = ANY($1)`,
          [ids],
        );
        if (open.n === 0) break;
        await sleep(200);
      }
      const elapsed = (performance.now() - started) / 1000;
      const waited = await waits.stop();
      window.toUs = profileClockUs();
      const cpu = {
        services: services.map((s, i) => cpuSeconds(s.pid) - cpuBefore.services[i]),
        network: cpuSeconds(net.pid) - cpuBefore.network,
        postgres: cpuSeconds(postmaster, true) - cpuBefore.postgres,
      };
      const rows = await db.query<{
        status: string;
        ledger: number | null;
        channel_account: string;
        transaction_hash: string;
        created: number;
        finalized: number;
      }>(
        `SELECT status, ledger, channel_account, transaction_hash,
          extract(epoch FROM created_at)::float8 * 1000 AS created,
          extract(epoch FROM updated_at)::float8 * 1000 AS finalized
           FROM settlements WHERE payment_attempt_id = ANY($1)`,
        [ids],
      );
      const settled = rows.filter((r) => r.status === 'settled');
      settledHashes.push(...settled.slice(0, 3).map((r) => r.transaction_hash));
      const ledgersHeld = settled.map((r) => r.ledger as number);
      const firstHeld = Math.min(...ledgersHeld);
      const lastHeld = Math.max(...ledgersHeld);
      const span = Math.max(1, lastHeld - firstHeld + 1);
      const perLedger = settled.length / span;
      const held = new Map<number, number>();
      for (const l of ledgersHeld) held.set(l, (held.get(l) ?? 0) + 1);
      // Channel turnaround: per channel, in the order of its transactions.
      const gaps: number[] = [];
      const inFlight: number[] = [];
      const byChannel = new Map<string, typeof settled>();
      for (const r of settled) byChannel.set(r.channel_account, [...(byChannel.get(r.channel_account) ?? []), r]);
      const ledgerSteps: number[] = [];
      for (const list of byChannel.values()) {
        list.sort((a, b) => a.created - b.created);
        for (let i = 0; i < list.length; i++) {
          inFlight.push(list[i].finalized - list[i].created);
          if (i > 0) {
            gaps.push(list[i].created - list[i - 1].finalized);
            ledgerSteps.push((list[i].ledger as number) - (list[i - 1].ledger as number));
          }
        }
      }
      const refused = answers.filter((a) => a.body.ok !== true);
      const failed = rows.filter((r) => r.status === 'failed').length;
      results.push({ n, perLedger });
      console.log(
        `N=${String(n).padStart(2)}: ${settled.length}/${count} settled in ledgers ${firstHeld}..${lastHeld} ` +
          `(${span}): ${perLedger.toFixed(2)} settlements per ledger ` +
          (`(ideal ${n}, ratio ${(perLedger / n).toFixed(2)}; fired just after ledger ${firstLedger} closed; ` +
            `${(settled.length / elapsed).toFixed(1)} per second; ${byChannel.size} channel(s) used; ${failed} ` +
            `failed on the ledger`) +
          (refused.length
            ? `; ${refused.length} settle answers not ok, first: ${refused[0].status} ` +
              `${JSON.stringify(refused[0].body).slice(0, 200)}`
            : '') +
          ')',
      );
      const firstWave = settled
        .map((r) => r.created - startedEpochMs)
        .sort((a, b) => a - b)
        .slice(0, n);
      console.log(
        `      first wave: the first ${firstWave.length} pending records (transaction built, channel pinned) ` +
          `${firstWave[0]?.toFixed(0)}..${firstWave[firstWave.length - 1]?.toFixed(0)} ms after the first settles ` +
          `were sent (p50 ${median(firstWave).toFixed(0)} ms; a ledger lasts ${ledgerMs} ms)`,
      );
      console.log(
        `      held per ledger: ${[...held.entries()]
          .sort((a, b) => a[0] - b[0])
          .map(([l, c]) => `${l}: ${c}`)
          .join(', ')}; ${sellerCount} sellers (one client address each), ${outstanding} settles outstanding`,
      );
      console.log(
        `      channel turnaround: free between two transactions p50 ${median(gaps).toFixed(0)} ms, p90 ` +
          `${quantile(gaps, 0.9).toFixed(0)} ms; ` +
          (`in flight (pending record -> final) p50 ${median(inFlight).toFixed(0)} ms; consecutive transactions ` +
            `of a channel ${ledgerSteps.filter((s) => s === 1).length}/${ledgerSteps.length} in the next ledger; `) +
          `settle answers p50 ${median(answers.map((a) => a.ms)).toFixed(0)} ms; ` +
          (`CPU during the burst (${elapsed.toFixed(1)} s): services ` +
            `${cpu.services.map((c) => c.toFixed(1)).join(' + ')} s, network ${cpu.network.toFixed(1)} s, ` +
            `PostgreSQL ${cpu.postgres.toFixed(1)} s; database pool ${poolMax} per service`),
      );

      console.log(`      ${waited}`);
      // Once, from the first round that settled anything (a later failure does not lose it).
      if (!ceilingPrinted && settledHashes.length) {
        console.log(await networkCeiling(net, settledHashes));
        ceilingPrinted = true;
      }

      // 2. Latency: one settle at a time, each at a random point of a ledger.
      const lat: number[] = [];
      let notSettled = 0;
      for (let i = 0; i < single.length; i++) {
        await sleep(Math.random() * ledgerMs);
        const seller = roundSellers[single[i].seller];
        const t0 = performance.now();
        const a = await post(services[i % 2].baseUrl, '/v1/settle', single[i].body, undefined, seller.clientAddress);
        const ms = performance.now() - t0;
        if (a.status === 200 && a.body.status === 'settled') lat.push(ms);
        else notSettled++;
      }
      latencies.push(...lat);
      if (lat.length) {
        console.log(
          `      settle -> settled, one at a time: p50 ${median(lat).toFixed(0)} ms, p90 ` +
            `${quantile(lat, 0.9).toFixed(0)} ms (${lat.length} settles; target <= ${ledgerMs + 250} ms)` +
            (notSettled ? `; ${notSettled} not answered settled` : ''),
        );
      }
    } finally {
      for (const s of services) {
        const file = await s.stop();
        if (file && window) {
          console.log(
            `      CPU profile of service ${s.pid} during the burst ` +
              `(${keepFile(file, `settle-N${n}-service-${s.pid}`)}):`,
          );
          console.log(summarizeCpuProfile(file, 15, window).replace(/^/gm, '        '));
        }
      }
    }
  }
  await net.stop();
  console.log(
    `settle -> settled latency p50: ${median(latencies).toFixed(0)} ms, p90 ` +
      `${quantile(latencies, 0.9).toFixed(0)} ms over ${latencies.length} settles one at a time (target <= 1 ` +
      `ledger close + 250 ms = ${ledgerMs + 250} ms)`,
  );
  const ok = results.every((r) => r.perLedger >= 0.9 * r.n);
  console.log(
    `ratio to the ideal N (settlements per ledger / N, ${ledgerMs} ms ledgers, target >= 0.9): ` +
      `${results.map((r) => `N=${r.n} ${(r.perLedger / r.n).toFixed(2)}`).join(', ')} (${ok ? 'met' : 'NOT met'})`,
  );
});
