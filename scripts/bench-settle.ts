/**
 * Facilitator benchmark: settlements per ledger for N = 1, 4, 16, 64 channel accounts, with TWO service processes
 * sharing one channel pool through one database (issue #14 item 3). Stellar admits one transaction per source
 * account per ledger, so with N channels the ideal is N settlements per ledger.
 *
 * Processes (scripts/bench/processes.ts): the bench's embedded PostgreSQL, the local network in its own process
 * (ledgers close every BENCH_LEDGER_MS, default 1000 ms), and per round two `server/src/main.ts` processes given the
 * SAME channel secrets (STELLAR_TESTNET_CHANNEL_SECRETS): the database lease table is what keeps them from using one
 * channel for two in-flight transactions. Each round verifies `BENCH_PER_CHANNEL x N` payments (default 3), then
 * fires every settle at once, alternating between the two services, waits until each settlement is final and counts
 * the ledgers that held them. Local simulation: real XDR, signatures and ledger rules.
 *
 * Prints one line per N, and last the ratio of the measured settlements per ledger to the ideal N.
 * Run with `npm run bench:settle`; BENCH_CHANNELS (default "1,4,16,64") overrides the rounds.
 */
import { Keypair } from '@stellar/stellar-sdk';
import { progress, runBench, startBenchDatabase, startNetworkProcess, startServiceProcess, type ServiceProcess } from './bench/processes';
import { channelSecrets, fundBuyers, signedVerifyBody } from './bench/payments';
import { seedSeller } from './bench/seed';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(baseUrl: string, path: string, body: unknown, apiKey?: string): Promise<{ status: number; body: Record<string, any> }> {
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

runBench(async () => {
  const rounds = (process.env.BENCH_CHANNELS ?? '1,4,16,64').split(',').map(Number);
  const perChannel = Number(process.env.BENCH_PER_CHANNEL ?? 3);
  const ledgerMs = Number(process.env.BENCH_LEDGER_MS ?? 1000);
  const db = await startBenchDatabase({ name: 'bench_settle' });
  const net = await startNetworkProcess({ ledgerCloseMs: ledgerMs });
  const usdc = net.assets.find((a) => a.code === 'USDC') ?? net.assets[0];

  const wallet = Keypair.random();
  await net.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const seller = await seedSeller(db, { walletAddress: wallet.publicKey(), domain: 'bench-settle.example.com' });

  const results: Array<{ n: number; perLedger: number }> = [];
  console.log(`settle with 2 service processes sharing one channel pool, local network at ${ledgerMs} ms ledgers (local simulation)`);
  for (const n of rounds) {
    const secrets = (await channelSecrets(net, n)).join(',');
    const env = { STELLAR_TESTNET_CHANNEL_SECRETS: secrets, FACILITATOR_CONFIRM_WAIT_MS: '120000' };
    const services: ServiceProcess[] = [];
    for (let i = 0; i < 2; i++) services.push(await startServiceProcess({ databaseUrl: db.url, rpcUrl: net.rpcUrl, assets: net.assets, env }));
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
      progress(`N=${n}: funding ${count} buyers and verifying their payments`);
      const buyers = await fundBuyers(net, count, '1');
      const expiration = (await net.latestLedger()) + Math.floor(300_000 / Math.max(ledgerMs, 1000)) - 5;
      const settles: Array<{ paymentAttemptId: string; paymentPayload: unknown; resourceId: string }> = [];
      for (const b of buyers) {
        const body = await signedVerifyBody({ passphrase: net.passphrase, asset: usdc, buyer: b, payTo: wallet.publicKey(), stroops: 100_000n, amount: '0.01', expiration, resourceId });
        const v = await post(services[settles.length % 2].baseUrl, '/v1/verify', body);
        if (v.status !== 200) throw new Error(`verify: ${v.status} ${JSON.stringify(v.body)}`);
        settles.push({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: body.paymentPayload, resourceId });
      }
      const firstLedger = await net.latestLedger();
      const started = performance.now();
      const answers = await Promise.all(settles.map((body, i) => post(services[i % 2].baseUrl, '/v1/settle', body)));
      const ids = settles.map((s) => s.paymentAttemptId);
      for (let i = 0; i < 600; i++) {
        const [open] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM settlements WHERE status = 'pending' AND payment_attempt_id = ANY($1)`, [ids]);
        if (open.n === 0) break;
        await sleep(200);
      }
      const elapsed = (performance.now() - started) / 1000;
      const rows = await db.query<{ status: string; ledger: number | null; channel_account: string }>(
        `SELECT status, ledger, channel_account FROM settlements WHERE payment_attempt_id = ANY($1)`,
        [ids],
      );
      const settled = rows.filter((r) => r.status === 'settled');
      const ledgers = Math.max(1, Math.max(...settled.map((r) => r.ledger as number)) - firstLedger);
      const perLedger = settled.length / ledgers;
      const refused = answers.filter((a) => a.body.ok !== true);
      const failed = rows.filter((r) => r.status === 'failed').length;
      results.push({ n, perLedger });
      console.log(
        `N=${String(n).padStart(2)}: ${settled.length}/${count} settled over ${ledgers} ledger(s): ${perLedger.toFixed(2)} settlements per ledger ` +
          `(ideal ${n}, ratio ${(perLedger / n).toFixed(2)}; ${(settled.length / elapsed).toFixed(1)} per second; ` +
          `${new Set(settled.map((r) => r.channel_account)).size} channel(s) used; ${failed} failed on the ledger` +
          (refused.length ? `; ${refused.length} settle answers not ok, first: ${refused[0].status} ${JSON.stringify(refused[0].body).slice(0, 200)}` : '') +
          ')',
      );
    } finally {
      for (const s of services) await s.stop();
    }
  }
  await net.stop();
  console.log(`ratio to the ideal N (settlements per ledger / N): ${results.map((r) => `N=${r.n} ${(r.perLedger / r.n).toFixed(2)}`).join(', ')}`);
});
