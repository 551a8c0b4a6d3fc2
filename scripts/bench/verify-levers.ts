/**
 * bench:verify-levers — the CPU of each step issue #31 changed on verify's path, the old way and the new way, in ONE
 * process on the same inputs (a real signed transfer and a real simulation answer of the local network, in process):
 *   1. the simulated transaction: `TransactionBuilder` from `new Account(source, '0')` + toXDR, against the envelope
 *      built straight in XDR (server/src/ledger/simulation-envelope.ts);
 *   2. the answer: `rpc.parseRawSimulation` (+ the outcome the rules read), against the rules-only read
 *      (server/src/ledger/simulation-answer.ts);
 *   3. a refusal's error at a request-deep stack: an Error capturing its stack, against DomainError (no stack);
 *   4. the spec validator's route lookup (express-openapi-validator runs `pathToRegexp` for every route of the spec on
 *      every request, memoized by server/src/http/openapi-route-cache.ts): the memo keyed by a JSON.stringify string
 *      per call, against the memo keyed by the route alone per flag pair; one operation = one request's lookup of
 *      POST /v1/verify over every route of openapi/dist/openapi.yaml;
 *   5. the shared-simulation key of a verify (server/src/domain/facilitator/check-payment.ts): the authorization
 *      entry encoded again (`toXDR('base64')`), against the encoding the offline rules already made, read back.
 * CPU time (process.cpuUsage) per operation, the best of BENCH_LEVER_ROUNDS (7) alternating rounds of
 * BENCH_LEVER_OPS (2000) operations, so that a busy machine disturbs the ratio little. Last line: the ratios.
 * Local simulation (the local network, in process; nothing leaves the machine).
 */
import { Account, BASE_FEE, Keypair, Operation, TransactionBuilder, rpc, xdr } from '@stellar/stellar-sdk';
import { startLocalNetwork } from '@paid-api-marketplace/local-network';
import { buildTransfer, fundedAccount, rpcClient } from '../../local-network/test/helpers';
import { simulationEnvelopeXdr } from '../../server/src/ledger/simulation-envelope';
import { simulationForRules } from '../../server/src/ledger/simulation-answer';
import { DomainError } from '../../server/src/domain/errors';
import { memoizeValidatorRouteCompilation } from '../../server/src/http/openapi-route-cache';
import { authEntryXdr, rememberCheckedEntry } from '../../server/src/domain/facilitator/check-payment';
import { envNumber } from './load';
import fs from 'node:fs';
import path from 'node:path';

const ROUNDS = envNumber('BENCH_LEVER_ROUNDS', 7);
const OPS = envNumber('BENCH_LEVER_OPS', 2000);

function cpuUsPerOp(fn: () => unknown): number {
  const start = process.cpuUsage();
  for (let i = 0; i < OPS; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / OPS;
}

/** Best CPU µs per operation of each variant, rounds alternating between them. */
function compare(variants: Record<string, () => unknown>): Record<string, number> {
  const best: Record<string, number> = {};
  for (const name of Object.keys(variants)) variants[name](); // warm
  for (let r = 0; r < ROUNDS; r++)
    for (const [name, fn] of Object.entries(variants)) best[name] = Math.min(best[name] ?? Infinity, cpuUsPerOp(fn));
  return best;
}

/** `fn` called `depth` frames deep: a refusal is thrown from deep inside express, the router and the domain. */
function atDepth<T>(depth: number, fn: () => T): T {
  return depth === 0 ? fn() : atDepth(depth - 1, fn);
}

type PathToRegexp = (route: string, options?: object) => { regexp: RegExp; keys: unknown[] };

/** One request's route lookup as express-openapi-validator 5.x makes it, old memo against new. */
function routeLookup(): Record<string, () => unknown> {
  const spec = fs.readFileSync(path.join(__dirname, '../../openapi/dist/openapi.yaml'), 'utf8');
  const paths = spec.slice(spec.indexOf('\npaths:'), spec.indexOf('\ncomponents:'));
  const routes = [...paths.matchAll(/^ {2}(\/\S*):$/gm)].map((m) => m[1].replace(/\{([^}]+)\}/g, ':$1'));
  const validatorDir = path.dirname(require.resolve('express-openapi-validator/package.json'));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(require.resolve('path-to-regexp', { paths: [validatorDir] })) as { pathToRegexp: PathToRegexp };
  const original = mod.pathToRegexp;
  const oldCache = new Map<string, ReturnType<PathToRegexp>>();
  const oldMemo: PathToRegexp = (route, options) => {
    const key = `${route}\u0000${options ? JSON.stringify(options) : ''}`;
    let hit = oldCache.get(key);
    if (!hit) oldCache.set(key, (hit = original(route, options)));
    return hit;
  };
  memoizeValidatorRouteCompilation();
  const newMemo = mod.pathToRegexp;
  const lookup = (compile: PathToRegexp) => () => {
    for (const route of routes)
      if (compile(route, { sensitive: false, strict: false }).regexp.exec('/v1/verify')) break;
  };
  return { old: lookup(oldMemo), new: lookup(newMemo) };
}

async function main(): Promise<void> {
  console.log(`bench:verify-levers — local simulation, in process; ${ROUNDS} rounds × ${OPS} operations per variant`);
  const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 0 });
  try {
    const [payer, payTo, source] = await Promise.all([
      fundedAccount(network, '5'),
      fundedAccount(network),
      fundedAccount(network, '0'),
    ]);
    const tx = await buildTransfer({
      network,
      server: rpcClient(network),
      submitter: source,
      from: payer.publicKey(),
      to: payTo.publicKey(),
      amount: 100_000n,
      authSigner: payer,
    });
    const op = tx.operations[0] as Operation.InvokeHostFunction;
    const func = op.func;
    const auth = op.auth ?? [];
    const from = Keypair.random().publicKey(); // a source whose strkey the builder decodes afresh each time
    const oldEnvelope = () =>
      new TransactionBuilder(new Account(from, '0'), { fee: BASE_FEE, networkPassphrase: network.networkPassphrase })
        .addOperation(Operation.invokeHostFunction({ func, auth }))
        .setTimeout(30)
        .build()
        .toXDR();
    const newEnvelope = () => simulationEnvelopeXdr(from, func, auth, 30);
    const envelope = compare({ old: oldEnvelope, new: newEnvelope });

    const res = await fetch(network.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'simulateTransaction',
        params: { transaction: newEnvelope(), authMode: 'enforce' },
      }),
    });
    const raw = ((await res.json()) as { result: rpc.Api.RawSimulateTransactionResponse }).result;
    if (raw.error) throw new Error(`the simulation failed: ${raw.error}`);
    const oldAnswer = () => {
      const sim = rpc.parseRawSimulation(raw);
      const events = (sim as { events?: xdr.DiagnosticEvent[] }).events ?? [];
      return { latestLedger: sim.latestLedger, events, fee: 'minResourceFee' in sim ? sim.minResourceFee : '0' };
    };
    const answer = compare({ old: oldAnswer, new: () => simulationForRules(raw) });

    const refusal = compare({
      old: () => atDepth(40, () => new Error('The authorization signature does not verify')),
      new: () => atDepth(40, () => new DomainError('INVALID_SIGNATURE', 'The authorization signature does not verify')),
    });

    const lookup = compare(routeLookup());

    // 5. As checkPayment does: the checked entry's encoding is remembered, the key reads it.
    const checkedEntry = xdr.SorobanAuthorizationEntry.fromXDR(auth[0].toXDR('base64'), 'base64');
    rememberCheckedEntry(checkedEntry, checkedEntry.toXDR('base64'));
    const keyOf = (encode: (a: xdr.SorobanAuthorizationEntry) => string) => () =>
      `stellar:testnet|${from}|${[checkedEntry].map(encode).join(',')}`;
    const simulationKey = compare({ old: keyOf((a) => a.toXDR('base64')), new: keyOf(authEntryXdr) });

    const line = (name: string, r: Record<string, number>) =>
      `${name}: old ${r.old.toFixed(1)} µs, new ${r.new.toFixed(1)} µs CPU per operation ` +
      `(${(r.old - r.new).toFixed(1)} µs saved)`;
    console.log(line('1. simulated envelope', envelope));
    console.log(line('2. simulation answer read', answer) + `; ${(raw.events ?? []).length} events in the answer`);
    console.log(line('3. refusal error, 40 frames deep', refusal));
    console.log(line('4. validator route lookup, one request', lookup));
    console.log(line('5. shared-simulation key', simulationKey));
    const savedValid =
      envelope.old -
      envelope.new +
      (answer.old - answer.new) +
      (lookup.old - lookup.new) +
      (simulationKey.old - simulationKey.new);
    console.log(
      `=== new ÷ old CPU: envelope ${(envelope.new / envelope.old).toFixed(2)}, answer ` +
        `${(answer.new / answer.old).toFixed(2)}, refusal error ${(refusal.new / refusal.old).toFixed(2)}, ` +
        `route lookup ${(lookup.new / lookup.old).toFixed(2)}, simulation key ` +
        `${(simulationKey.new / simulationKey.old).toFixed(2)}; saved per ` +
        `valid verify ${savedValid.toFixed(0)} ` +
        `µs, per invalid-signature refusal ${(refusal.old - refusal.new + lookup.old - lookup.new).toFixed(0)} µs ===`,
    );
  } finally {
    await network.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
