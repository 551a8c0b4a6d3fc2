/**
 * Facilitator benchmark: settlements per ledger with 1, 4 and 16 channel accounts. Stellar admits one transaction per
 * source account per ledger, so the channel pool bounds throughput. Each round verifies `4 x channels` payments,
 * then settles them all at once through HTTP against the local network (ledgers close every BENCH_LEDGER_MS,
 * default 500 ms) and counts the ledgers it took. Local simulation: real XDR, signatures and ledger rules.
 * Run with `npm run bench:settle`; BENCH_CHANNELS (default "1,4,16") and BENCH_PER_CHANNEL (default 4) bound it.
 */
import { performance } from 'node:perf_hooks';
import { fundedBuyers, postJson, signedPayment, startBenchEnv, stopDatabase } from './bench-verify';

async function round(channels: number, perChannel: number, ledgerMs: number) {
  const env = await startBenchEnv({ channelAccounts: channels, ledgerCloseMs: ledgerMs });
  try {
    const n = channels * perChannel;
    const buyers = await fundedBuyers(env, n, '10');
    const expiration = env.network.latestLedger() + 10_000;
    const verified = [];
    for (const b of buyers) {
      const body = await signedPayment(env, b, expiration);
      const v = await postJson(env, '/v1/verify', body);
      if (v.status !== 200) throw new Error(`verify: ${v.status} ${JSON.stringify(v.body)}`);
      verified.push({ paymentAttemptId: v.body.paymentAttemptId as string, paymentPayload: body.paymentPayload, resourceId: body.resourceId });
    }
    const firstLedger = env.network.latestLedger();
    const started = performance.now();
    const answers = await Promise.all(verified.map((body) => postJson(env, '/v1/settle', body)));
    const elapsed = (performance.now() - started) / 1000;
    const settledLedgers = answers.filter((a) => a.status === 200).map((a) => a.body.ledger as number);
    const ledgers = Math.max(1, Math.max(...settledLedgers) - firstLedger);
    const failed = answers.filter((a) => a.status !== 200);
    console.log(
      `${String(channels).padStart(2)} channel account(s): ${settledLedgers.length}/${n} settled over ${ledgers} ledger(s) ` +
        `(${(settledLedgers.length / ledgers).toFixed(2)} settlements per ledger, ${(settledLedgers.length / elapsed).toFixed(1)} per second at ${ledgerMs} ms ledgers)` +
        (failed.length ? `, ${failed.length} not settled (first: ${failed[0].status} ${JSON.stringify(failed[0].body)})` : ''),
    );
  } finally {
    await env.stop();
  }
}

async function main() {
  const channels = (process.env.BENCH_CHANNELS ?? '1,4,16').split(',').map(Number);
  const perChannel = Number(process.env.BENCH_PER_CHANNEL ?? 4);
  const ledgerMs = Number(process.env.BENCH_LEDGER_MS ?? 500);
  console.log('settle over HTTP against the local network (local simulation)');
  try {
    for (const c of channels) await round(c, perChannel, ledgerMs);
  } finally {
    await stopDatabase();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
