/**
 * Benchmark of the local Stellar network (local simulation): how many SAC transfers per second this machine
 * simulates (simulateTransaction), and verifies and applies (sendTransaction + ledger close), over HTTP JSON-RPC
 * with real XDR and real ed25519 signatures. Run with `npm run bench:local-network`; BENCH_PAYERS (default 200)
 * and BENCH_ROUNDS (default 3) bound the run. Client-side building and signing is not counted.
 */
import { performance } from 'node:perf_hooks';
import {
  Account,
  BASE_FEE,
  Contract,
  Keypair,
  Operation,
  Transaction,
  TransactionBuilder,
  authorizeEntry,
  nativeToScVal,
  rpc,
} from '@stellar/stellar-sdk';
import { LocalNetwork, startLocalNetwork } from '@paid-api-marketplace/local-network';
import { fromStroops } from '../server/src/domain/amount';

const PAYERS = Number(process.env.BENCH_PAYERS ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = 32;
const AMOUNT = 1_000_000n; // 0.1 USDC

async function inBatches<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CONCURRENCY)
    out.push(...(await Promise.all(items.slice(i, i + CONCURRENCY).map(fn))));
  return out;
}

/** A transfer from `payer` to `payTo` submitted by `channel`, with the payer's address credentials signed. */
async function buildTransfer(
  network: LocalNetwork,
  server: rpc.Server,
  channel: Keypair,
  payer: Keypair,
  payTo: string,
): Promise<Transaction> {
  const account = await server.getAccount(channel.publicKey());
  const op = new Contract(network.assets[0].contractId).call(
    'transfer',
    nativeToScVal(payer.publicKey(), { type: 'address' }),
    nativeToScVal(payTo, { type: 'address' }),
    nativeToScVal(AMOUNT, { type: 'i128' }),
  );
  const draft = new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: network.networkPassphrase })
    .addOperation(op)
    .setTimeout(300)
    .build();
  const sim = await server.simulateTransaction(draft);
  if (!rpc.Api.isSimulationSuccess(sim)) throw new Error(`simulation failed: ${sim.error}`);
  const auth = await Promise.all(
    (sim.result?.auth ?? []).map((e) =>
      authorizeEntry(e, payer, network.latestLedger() + 100, network.networkPassphrase),
    ),
  );
  const tx = new TransactionBuilder(
    new Account(channel.publicKey(), (BigInt(account.sequenceNumber()) - 1n).toString()),
    {
      fee: BASE_FEE,
      networkPassphrase: network.networkPassphrase,
    },
  )
    .setSorobanData(sim.transactionData.build())
    .addOperation(
      Operation.invokeHostFunction({ func: (draft.operations[0] as Operation.InvokeHostFunction).func, auth }),
    )
    .setTimeout(300)
    .build();
  tx.sign(channel);
  return tx;
}

const rate = (count: number, ms: number): string => `${((count * 1000) / ms).toFixed(0)}/s`;

async function main(): Promise<void> {
  const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 0 });
  const server = new rpc.Server(network.rpcUrl, { allowHttp: true });
  try {
    console.log(
      `local network bench (local simulation): ${PAYERS} payers, ${ROUNDS} rounds, ${CONCURRENCY} concurrent requests`,
    );
    const payTo = Keypair.random();
    await network.faucet(payTo.publicKey(), 'USDC', '1');
    const payers = Array.from({ length: PAYERS }, () => Keypair.random());
    const channels = Array.from({ length: PAYERS }, () => Keypair.random());
    const fundStart = performance.now();
    for (const payer of payers) await network.faucet(payer.publicKey(), 'USDC', '1000');
    for (const channel of channels) await network.fundAccount(channel.publicKey());
    console.log(`funded ${PAYERS * 2} accounts in ${(performance.now() - fundStart).toFixed(0)} ms`);

    let simulated = 0;
    let simulateMs = 0;
    let applied = 0;
    let sendMs = 0;
    let closeMs = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      const txs = await inBatches(
        payers.map((p, i) => [p, channels[i]] as const),
        ([payer, channel]) => buildTransfer(network, server, channel, payer, payTo.publicKey()),
      );

      const simStart = performance.now();
      await inBatches(txs, async (tx) => {
        const sim = await server.simulateTransaction(tx);
        if (!rpc.Api.isSimulationSuccess(sim)) throw new Error(`simulation failed: ${sim.error}`);
      });
      simulateMs += performance.now() - simStart;
      simulated += txs.length;

      const sendStart = performance.now();
      const sent = await inBatches(txs, (tx) => server.sendTransaction(tx));
      sendMs += performance.now() - sendStart;
      const refused = sent.filter((s) => s.status !== 'PENDING');
      if (refused.length > 0) throw new Error(`${refused.length} submissions refused: ${refused[0].status}`);

      const closeStart = performance.now();
      const ledger = await network.closeLedger();
      closeMs += performance.now() - closeStart;
      const results = await inBatches(sent, (s) => server.getTransaction(s.hash));
      const ok = results.filter((r) => r.status === rpc.Api.GetTransactionStatus.SUCCESS).length;
      if (ok !== txs.length) throw new Error(`round ${round}: ${txs.length - ok} transfers failed in ledger ${ledger}`);
      applied += ok;
    }

    const expectedStroops = AMOUNT * BigInt(applied) + 10_000_000n;
    console.log(
      `payee holds ${network.balance(payTo.publicKey(), 'USDC')} USDC (expected ${fromStroops(expectedStroops)})`,
    );
    console.log('figures (this machine, local simulation):');
    console.log(
      `  simulated  (simulateTransaction, enforcing signed auth): ${simulated} transfers in ` +
        `${simulateMs.toFixed(0)} ms = ${rate(simulated, simulateMs)}`,
    );
    console.log(
      `  verified   (sendTransaction: signatures, seq, fees):     ${applied} transfers in ${sendMs.toFixed(0)} ` +
        `ms = ${rate(applied, sendMs)}`,
    );
    console.log(
      `  applied    (ledger close: auth, nonces, balances):       ${applied} transfers in ${closeMs.toFixed(0)} ` +
        `ms = ${rate(applied, closeMs)}`,
    );
    console.log(`  verified + applied end to end:                            ${rate(applied, sendMs + closeMs)}`);
  } finally {
    await network.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
