/**
 * Fair-capacity benchmark (issue #29 item 12, "Starving everyone's settlements"): an honest seller's settle latency
 * alone, then under a flood of self-dealing dust settles from ONE client and FIVE free sellers, on the same run.
 *
 * Processes (scripts/bench/processes.ts): the bench's embedded PostgreSQL, the local network in its own process
 * (ledgers close every BENCH_LEDGER_MS, default 1000 ms), one `server/src/main.ts` process with the default pool of
 * BENCH_CHANNELS (4) channel accounts and default fair-capacity bounds, and this process as the load generator. The
 * service listens on 127.0.0.1; the honest buyer's requests leave from 127.0.0.2 and the flood's from 127.0.0.1
 * (`localAddress`), so the service sees two clients (req.ip).
 *
 *   1. alone: BENCH_HONEST_SETTLES (default 20) honest settles of 0.01 USDC, one at a time, each fired at a random
 *      point of a ledger, timed from the request to the answer (given once the settlement is final: settled);
 *   2. under the flood: the five flood sellers' wallets pay one another 0.0001 USDC (self-dealing dust, every payment
 *      verified beforehand), 45 settles outstanding at every moment from the flood client: a settle that ends is
 *      replaced at once by a fresh payment; one refused with 503 is sent again after its Retry-After, as a client
 *      honouring it does (one ignoring it meets the rate limit per client instead); meanwhile the same number of
 *      honest settles, measured the same way.
 * Prints p50/p95 of both phases, what the flood got (settled, refused and by which bound), and last the ratio of the
 * p95s (target <= 1.5). Local simulation: real XDR, signatures and ledger rules; nothing here touches testnet.
 * BENCH_SERVICE_TREE=<commit> runs the service from another commit (e.g. the one before fair capacity).
 */
import { postFrom } from './bench/load';
import os from 'node:os';
import { Keypair } from '@stellar/stellar-sdk';
import {
  progress,
  runBench,
  startBenchDatabase,
  startNetworkProcess,
  startServiceProcess,
  type NetworkAsset,
  type NetworkProcess,
} from './bench/processes';
import { channelSecrets, fundBuyers, signedVerifyBody } from './bench/payments';
import { seedSeller, type SeededSeller } from './bench/seed';
import { benchResourceInput } from './bench/verify-resource';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FLOOD_CLIENT = '127.0.0.1';
const HONEST_CLIENT = '127.0.0.2';
const FLOOD_IN_FLIGHT = 45;

const post = postFrom;

function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

interface Settle {
  paymentAttemptId: string;
  paymentPayload: unknown;
  resourceId: string;
}

async function createResource(
  baseUrl: string,
  seller: SeededSeller,
  asset: NetworkAsset,
  amount: string,
  name: string,
): Promise<string> {
  const r = await post(
    HONEST_CLIENT,
    `${baseUrl}/v1/resources`,
    benchResourceInput({
      sellerId: seller.sellerId,
      name,
      description: 'A paid endpoint for the settle fairness benchmark',
      host: seller.domain,
      payTo: seller.walletAddress,
      asset,
      amount,
    }),
    seller.apiKey,
  );
  if (r.status !== 201) throw new Error(`resource: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id as string;
}

/** Verified payments (POST /v1/verify, 8 at a time), ready to settle. */
async function verifiedPayments(
  baseUrl: string,
  net: NetworkProcess,
  asset: NetworkAsset,
  specs: Array<{ payer: Keypair; payTo: string; resourceId: string; amount: string; stroops: bigint }>,
  expiration: number,
): Promise<Settle[]> {
  const out: Settle[] = new Array(specs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < specs.length) {
        const i = next++;
        const s = specs[i];
        const body = await signedVerifyBody({
          passphrase: net.passphrase,
          asset,
          buyer: s.payer,
          payTo: s.payTo,
          stroops: s.stroops,
          amount: s.amount,
          expiration,
          resourceId: s.resourceId,
        });
        const v = await post(HONEST_CLIENT, `${baseUrl}/v1/verify`, body);
        if (v.status !== 200) throw new Error(`verify: ${v.status} ${JSON.stringify(v.body)}`);
        out[i] = {
          paymentAttemptId: v.body.paymentAttemptId,
          paymentPayload: body.paymentPayload,
          resourceId: s.resourceId,
        };
      }
    }),
  );
  return out;
}

/** Honest settles one at a time, each at a random point of a ledger: the latencies of those answered settled. */
async function honestRun(
  baseUrl: string,
  settles: Settle[],
  ledgerMs: number,
): Promise<{ ms: number[]; other: string[] }> {
  const ms: number[] = [];
  const other: string[] = [];
  for (const s of settles) {
    await sleep(Math.random() * ledgerMs);
    const t0 = performance.now();
    const a = await post(HONEST_CLIENT, `${baseUrl}/v1/settle`, s);
    if (a.status === 200 && a.body.status === 'settled') ms.push(performance.now() - t0);
    else other.push(`${a.status} ${a.body.error?.code ?? a.body.status}`);
  }
  return { ms, other };
}

runBench(async () => {
  const ledgerMs = Number(process.env.BENCH_LEDGER_MS ?? 1000);
  const channels = Number(process.env.BENCH_CHANNELS ?? 4);
  const honestCount = Number(process.env.BENCH_HONEST_SETTLES ?? 20);
  const floodSupply = Number(process.env.BENCH_FLOOD_PAYMENTS ?? 200);
  const loadBefore = os.loadavg();
  const db = await startBenchDatabase({ name: 'bench_settle_fairness' });
  const net = await startNetworkProcess({ ledgerCloseMs: ledgerMs });
  const usdc = net.assets.find((a) => a.code === 'USDC') ?? net.assets[0];
  const secrets = (await channelSecrets(net, channels)).join(',');
  const svc = await startServiceProcess({
    databaseUrl: db.url,
    rpcUrl: net.rpcUrl,
    assets: net.assets,
    env: {
      STELLAR_TESTNET_CHANNEL_SECRETS: secrets,
      SETTLEMENT_TX_TIMEOUT_SECONDS: '120',
      LEDGER_CLOSE_MS: String(ledgerMs),
    },
  });

  progress(
    'seeding the honest seller, five flood sellers (wallets funded: they pay one another) and the honest buyers',
  );
  const honestWallet = Keypair.random();
  await net.faucet(honestWallet.publicKey(), 'USDC', '0.0000001');
  const honest = await seedSeller(db, { walletAddress: honestWallet.publicKey(), domain: 'honest-seller.example.com' });
  const honestResource = await createResource(svc.baseUrl, honest, usdc, '0.01', 'Honest resource');
  const floodWallets = Array.from({ length: 5 }, () => Keypair.random());
  const flooders: Array<{ seller: SeededSeller; resourceId: string; wallet: Keypair }> = [];
  for (const [i, w] of floodWallets.entries()) {
    await net.fund(w.publicKey());
    await net.faucet(w.publicKey(), 'USDC', '10');
    const seller = await seedSeller(db, { walletAddress: w.publicKey(), domain: `flood-${i}.example.com` });
    flooders.push({
      seller,
      wallet: w,
      resourceId: await createResource(svc.baseUrl, seller, usdc, '0.0001', `Flood resource ${i}`),
    });
  }
  const buyers = await fundBuyers(net, 2 * honestCount, '1');
  const expiration = (await net.latestLedger()) + Math.floor(300_000 / Math.max(ledgerMs, 1000)) - 5;
  progress(`verifying ${2 * honestCount} honest and ${floodSupply} flood payments`);
  const honestSettles = await verifiedPayments(
    svc.baseUrl,
    net,
    usdc,
    buyers.map((b) => ({
      payer: b,
      payTo: honestWallet.publicKey(),
      resourceId: honestResource,
      amount: '0.01',
      stroops: 100_000n,
    })),
    expiration,
  );
  const floodSettles = await verifiedPayments(
    svc.baseUrl,
    net,
    usdc,
    Array.from({ length: floodSupply }, (_, i) => {
      const payee = flooders[(i + 1) % 5];
      return {
        payer: flooders[i % 5].wallet,
        payTo: payee.seller.walletAddress,
        resourceId: payee.resourceId,
        amount: '0.0001',
        stroops: 1_000n,
      };
    }),
    expiration,
  );

  console.log(
    `settle fairness: one service process, ${channels} channel accounts (default fair-capacity bounds), local ` +
      `network at ${ledgerMs} ms ledgers (local simulation); ` +
      `load average before: ${loadBefore.map((l) => l.toFixed(2)).join(' ')} on ${os.cpus().length} CPU(s)`,
  );

  // 1. The honest seller's settles alone.
  progress(`phase 1: ${honestCount} honest settles alone`);
  const alone = await honestRun(svc.baseUrl, honestSettles.slice(0, honestCount), ledgerMs);

  // 2. The same under the flood: 45 outstanding at every moment from the flood client.
  progress(
    `phase 2: ${honestCount} honest settles under a flood of ${FLOOD_IN_FLIGHT} outstanding self-dealing dust settles`,
  );
  const flood = {
    sent: 0,
    settled: 0,
    refused: 0,
    other: 0,
    bounds: new Map<string, number>(),
    refusedMs: [] as number[],
    exhausted: false,
  };
  let stop = false;
  let nextFresh = 0;
  const floodLoop = async () => {
    let current: Settle | null = null;
    while (!stop) {
      if (!current) {
        if (nextFresh >= floodSettles.length) {
          flood.exhausted = true;
          return;
        }
        current = floodSettles[nextFresh++];
      }
      const t0 = performance.now();
      flood.sent++;
      const a = await post(FLOOD_CLIENT, `${svc.baseUrl}/v1/settle`, current).catch(() => null);
      if (a && a.status === 503) {
        flood.refused++;
        flood.refusedMs.push(performance.now() - t0);
        const bound = a.body.error?.details?.[0]?.code ?? 'channel wait timeout';
        flood.bounds.set(bound, (flood.bounds.get(bound) ?? 0) + 1);
        await sleep(1000 * (a.retryAfter ?? 1)); // the same payment (not used) is sent again after Retry-After
        continue;
      }
      if (a && a.status === 200) flood.settled++;
      else flood.other++;
      current = null;
    }
  };
  const loops = Array.from({ length: FLOOD_IN_FLIGHT }, () => floodLoop());
  await sleep(2 * ledgerMs); // the flood fills the pool and the queue before the first honest settle
  const underFlood = await honestRun(svc.baseUrl, honestSettles.slice(honestCount), ledgerMs);
  stop = true;
  progress("waiting for the flood's outstanding settles to end");
  await Promise.all(loops);
  const loadAfter = os.loadavg();
  await svc.stop();
  await net.stop();

  const p = (xs: number[], q: number) => quantile(xs, q).toFixed(0);
  console.log(
    `honest seller alone:       settle -> settled p50 ${p(alone.ms, 0.5)} ms, p95 ${p(alone.ms, 0.95)} ms ` +
      `(${alone.ms.length} settled${alone.other.length ? `; not settled: ${alone.other.join(', ')}` : ''})`,
  );
  console.log(
    `honest seller under flood: settle -> settled p50 ${p(underFlood.ms, 0.5)} ms, p95 ` +
      `${p(underFlood.ms, 0.95)} ms (${underFlood.ms.length} ` +
      `settled${underFlood.other.length ? `; not settled: ${underFlood.other.join(', ')}` : ''})`,
  );
  console.log(
    `flood (one client, five sellers, ${FLOOD_IN_FLIGHT} outstanding): ${flood.sent} settle requests, ` +
      `${flood.settled} settled, ${flood.refused} refused 503 ` +
      (`(${[...flood.bounds].map(([k, v]) => `${k}: ${v}`).join(', ') || 'none'}; answered in p50 ` +
        `${p(flood.refusedMs, 0.5)} ms, p95 ${p(flood.refusedMs, 0.95)} ms), ${flood.other} other answers`) +
      (flood.exhausted ? ' (flood payments ran out: raise BENCH_FLOOD_PAYMENTS)' : ''),
  );
  console.log(`load average after: ${loadAfter.map((l) => l.toFixed(2)).join(' ')}`);
  const ratio = quantile(underFlood.ms, 0.95) / quantile(alone.ms, 0.95);
  console.log(`ratio of the honest seller's p95 under flood to its p95 alone: ${ratio.toFixed(2)} (target <= 1.5)`);
});
