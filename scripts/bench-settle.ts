/**
 * Facilitator benchmark: settlements per ledger for N = 1, 4, 16, 64 channel accounts, with TWO service processes
 * sharing one channel pool through one database (issue #14 item 3). Stellar admits one transaction per source
 * account per ledger, so with N channels the ideal is N settlements per ledger.
 *
 * Processes (scripts/bench/processes.ts): the bench's embedded PostgreSQL, the local network in its own process
 * (ledgers close every BENCH_LEDGER_MS, default 1000 ms), and per round two `server/src/main.ts` processes given the
 * SAME channel secrets (STELLAR_TESTNET_CHANNEL_SECRETS): the database lease table is what keeps them from using one
 * channel for two in-flight transactions. Each round:
 *   1. throughput: verifies `BENCH_PER_CHANNEL x N` payments (default 3), fires every settle at once, alternating
 *      between the two services, waits until each settlement is final and counts the ledgers that held them, from
 *      the first to the last (a burst starts at a random point of a ledger: the ledger open when it was fired is
 *      printed too, but not counted, so the figure is the steady rate of the pool, not the burst's alignment);
 *   2. latency: `BENCH_LATENCY_SETTLES` (default 10) settles one at a time, each fired at a random point of a ledger
 *      (uniform delay of 0..1 ledger before it), timed from the request to the answer, which the service gives once
 *      the settlement is final on the ledger (settled): "settle -> settled".
 * Local simulation: real XDR, signatures and ledger rules.
 *
 * Prints per N the settlements per ledger, the channel turnaround (median time a channel sat free between the final
 * answer of its transaction and the pending record of its next one, and median time in flight), the CPU seconds of
 * each process during the burst, the settle -> settled latency, and last the ratio to the ideal N.
 * BENCH_CHANNELS (default "1,4,16,64") overrides the rounds; BENCH_PROFILE=1 runs the services under --cpu-prof and
 * prints where their CPU went during the burst.
 */
import fs from 'node:fs';
import { Keypair } from '@stellar/stellar-sdk';
import {
  keepFile,
  progress,
  runBench,
  startBenchDatabase,
  startNetworkProcess,
  startServiceProcess,
  type ServiceProcess,
} from './bench/processes';
import { channelSecrets, fundBuyers, signedVerifyBody } from './bench/payments';
import { seedSeller } from './bench/seed';
import { profileClockUs, summarizeCpuProfile } from './bench/cpu-profile';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(
  baseUrl: string,
  path: string,
  body: unknown,
  apiKey?: string,
): Promise<{ status: number; body: Record<string, any> }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(`${baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    } catch (err) {
      if (attempt >= 2) throw err; // a connection reset before the request reached a handler
      await sleep(50);
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

runBench(async () => {
  const rounds = (process.env.BENCH_CHANNELS ?? '1,4,16,64').split(',').map(Number);
  const perChannel = Number(process.env.BENCH_PER_CHANNEL ?? 3);
  const latencySettles = Number(process.env.BENCH_LATENCY_SETTLES ?? 10);
  const ledgerMs = Number(process.env.BENCH_LEDGER_MS ?? 1000);
  const profile = process.env.BENCH_PROFILE === '1';
  const db = await startBenchDatabase({ name: 'bench_settle' });
  const net = await startNetworkProcess({ ledgerCloseMs: ledgerMs });
  const usdc = net.assets.find((a) => a.code === 'USDC') ?? net.assets[0];
  const [{ setting: pgData }] = await db.query<{ setting: string }>(
    `SELECT setting FROM pg_settings WHERE name = 'data_directory'`,
  );
  const postmaster = Number(fs.readFileSync(`${pgData}/postmaster.pid`, 'utf8').split('\n')[0]);

  const wallet = Keypair.random();
  await net.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const seller = await seedSeller(db, { walletAddress: wallet.publicKey(), domain: 'bench-settle.example.com' });

  const results: Array<{ n: number; perLedger: number }> = [];
  const latencies: number[] = [];
  console.log(
    `settle with 2 service processes sharing one channel pool, local network at ${ledgerMs} ms ledgers (local ` +
      `simulation)`,
  );
  for (const n of rounds) {
    const secrets = (await channelSecrets(net, n)).join(',');
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
          payTo: wallet.publicKey(),
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
      const resourceId = resource.body.id as string;
      const count = n * perChannel;
      progress(`N=${n}: funding ${count + latencySettles} buyers and verifying their payments`);
      const buyers = await fundBuyers(net, count + latencySettles, '1');
      const expiration = (await net.latestLedger()) + Math.floor(300_000 / Math.max(ledgerMs, 1000)) - 5;
      const settles: Array<{ paymentAttemptId: string; paymentPayload: unknown; resourceId: string }> = new Array(
        buyers.length,
      );
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < buyers.length) {
            const i = next++;
            const body = await signedVerifyBody({
              passphrase: net.passphrase,
              asset: usdc,
              buyer: buyers[i],
              payTo: wallet.publicKey(),
              stroops: 100_000n,
              amount: '0.01',
              expiration,
              resourceId,
            });
            const v = await post(services[i % 2].baseUrl, '/v1/verify', body);
            if (v.status !== 200) throw new Error(`verify: ${v.status} ${JSON.stringify(v.body)}`);
            settles[i] = { paymentAttemptId: v.body.paymentAttemptId, paymentPayload: body.paymentPayload, resourceId };
          }
        }),
      );
      const burst = settles.slice(0, count);
      const single = settles.slice(count);

      // 1. Throughput: every settle at once.
      const cpuBefore = {
        services: services.map((s) => cpuSeconds(s.pid)),
        network: cpuSeconds(net.pid),
        postgres: cpuSeconds(postmaster, true),
      };
      const firstLedger = await net.latestLedger();
      const started = performance.now();
      window = { fromUs: profileClockUs(), toUs: 0 };
      const answers = await Promise.all(
        burst.map(async (body, i) => {
          const t0 = performance.now();
          const a = await post(services[i % 2].baseUrl, '/v1/settle', body);
          return { ...a, ms: performance.now() - t0 };
        }),
      );
      const ids = burst.map((s) => s.paymentAttemptId);
      for (let i = 0; i < 600; i++) {
        const [open] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM settlements WHERE status = 'pending' AND payment_attempt_id = ANY($1)`,
          [ids],
        );
        if (open.n === 0) break;
        await sleep(200);
      }
      const elapsed = (performance.now() - started) / 1000;
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
        created: number;
        finalized: number;
      }>(
        `SELECT status, ledger, channel_account, extract(epoch FROM created_at)::float8 * 1000 AS created,
          extract(epoch FROM updated_at)::float8 * 1000 AS finalized
           FROM settlements WHERE payment_attempt_id = ANY($1)`,
        [ids],
      );
      const settled = rows.filter((r) => r.status === 'settled');
      const ledgersHeld = settled.map((r) => r.ledger as number);
      const firstHeld = Math.min(...ledgersHeld);
      const lastHeld = Math.max(...ledgersHeld);
      const span = Math.max(1, lastHeld - firstHeld + 1);
      const perLedger = settled.length / span;
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
          (`(ideal ${n}, ratio ${(perLedger / n).toFixed(2)}; fired in ledger ${firstLedger + 1}, ` +
            `${lastHeld - firstLedger} ledger(s) counted from it: ` +
            `${(settled.length / Math.max(1, lastHeld - firstLedger)).toFixed(2)}/ledger; `) +
          (`${(settled.length / elapsed).toFixed(1)} per second; ${byChannel.size} channel(s) used; ${failed} ` +
            `failed on the ledger`) +
          (refused.length
            ? `; ${refused.length} settle answers not ok, first: ${refused[0].status} ` +
              `${JSON.stringify(refused[0].body).slice(0, 200)}`
            : '') +
          ')',
      );
      console.log(
        `      channel turnaround: free between two transactions p50 ${median(gaps).toFixed(0)} ms, p90 ` +
          `${quantile(gaps, 0.9).toFixed(0)} ms; ` +
          (`in flight (pending record -> final) p50 ${median(inFlight).toFixed(0)} ms; consecutive transactions ` +
            `of a channel ${ledgerSteps.filter((s) => s === 1).length}/${ledgerSteps.length} in the next ledger; `) +
          `burst answers p50 ${median(answers.map((a) => a.ms)).toFixed(0)} ms; ` +
          (`CPU during the burst (${elapsed.toFixed(1)} s): services ` +
            `${cpu.services.map((c) => c.toFixed(1)).join(' + ')} s, network ${cpu.network.toFixed(1)} s, ` +
            `PostgreSQL ${cpu.postgres.toFixed(1)} s; database pool ${poolMax} per service`),
      );

      // 2. Latency: one settle at a time, each at a random point of a ledger.
      const lat: number[] = [];
      let notSettled = 0;
      for (let i = 0; i < single.length; i++) {
        await sleep(Math.random() * ledgerMs);
        const t0 = performance.now();
        const a = await post(services[i % 2].baseUrl, '/v1/settle', single[i]);
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
  console.log(
    `ratio to the ideal N (settlements per ledger / N): ` +
      `${results.map((r) => `N=${r.n} ${(r.perLedger / r.n).toFixed(2)}`).join(', ')}`,
  );
});
