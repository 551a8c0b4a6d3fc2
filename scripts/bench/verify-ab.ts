/**
 * bench:verify-ab — the CPU per verify of two builds of the service, measured side by side on a busy machine: both
 * run at once (each its own process, one database, one local network), and short closed-loop rounds alternate
 * between them (A B, then B A, ...), so that both see the same moments of the machine's load. Per round: the
 * service's CPU per request from /proc (user + system), for invalid-signature refusals (no API key, as hostile
 * traffic is sent) and valid verifies (the seller's API key + a fresh Idempotency-Key, as the seller SDK sends).
 * Last lines: the median of each, and the median of B ÷ A within a round (the load moves between rounds far more than
 * within one).
 *
 *   BENCH_AB_A=<folder> BENCH_AB_B=<folder> npm run bench:verify-ab
 *
 * A folder is a checkout with its server built (`node scripts/build-server.mjs --if-stale` in it; its node_modules
 * may be links to this tree's); default B is this tree (built first if stale). BENCH_AB_ROUNDS (6) rounds of
 * BENCH_AB_SECONDS (4) per kind and build, after a warm-up round of BENCH_AB_WARMUP_SECONDS (2; 0: none) that is not
 * recorded, BENCH_CONCURRENCY (16). Local simulation; loopback only.
 */
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { closedLoop, envNumber, httpClient, percentile } from './load';
import * as bench from './processes';
import { fundBuyers } from './payments';
import { seedSeller } from './seed';
import { createBenchResource, verifySigner } from './verify-resource';

const ROUNDS = envNumber('BENCH_AB_ROUNDS', 6);
const SECONDS = envNumber('BENCH_AB_SECONDS', 4);
const WARMUP_SECONDS = envNumber('BENCH_AB_WARMUP_SECONDS', 2, true);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 16);
const LEDGER_MS = 5000;
const AMOUNT = '0.01';
const STROOPS = 100_000n;

async function startBuild(name: string, tree: string, databaseUrl: string, rpcUrl: string, assets: string) {
  const dir = bench.tempDir(`bench-ab-${name}-`);
  const proc = bench.startNodeProcess('server/dist/main.js', {
    name: `service ${name}`,
    tsx: false,
    cwd: tree,
    nodeArgs: bench.npmStartNodeFlags(tree),
    env: {
      APP_ENV: 'bench',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dir,
      DATABASE_URL: databaseUrl,
      LOCAL_NETWORK: 'false',
      STELLAR_TESTNET_RPC_URL: rpcUrl,
      STELLAR_TESTNET_ASSETS: assets,
      OPERATOR_API_KEY: bench.BENCH_OPERATOR_KEY,
      RATE_LIMIT_REQUESTS: '1000000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      LOG_REQUESTS: 'false',
      RESPONSE_VALIDATION: 'false',
      LEDGER_CLOSE_MS: String(LEDGER_MS),
      WEB_CONCURRENCY: '1',
    },
  });
  bench.onStop(async () => void (await proc.stop(10_000)));
  const deadline = Date.now() + 180_000;
  for (;;) {
    const [port] = bench.listeningPorts(proc.pid);
    if (port) {
      const base = `http://127.0.0.1:${port}`;
      const up = await httpClient(base)
        .request('GET', '/health')
        .then((a) => a.status < 500)
        .catch(() => false);
      if (up) {
        bench.progress(`service ${name} (${tree}) running (pid ${proc.pid}) at ${base}`);
        return { name, pid: proc.pid, api: httpClient(base) };
      }
    }
    if (proc.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`service ${name} did not start:\n${proc.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main() {
  const treeA = process.env.BENCH_AB_A;
  const treeB = process.env.BENCH_AB_B ?? bench.REPO_ROOT;
  if (!treeA) throw new Error('BENCH_AB_A=<folder of the other build> is required');
  if (treeB === bench.REPO_ROOT)
    execFileSync(process.execPath, ['scripts/build-server.mjs', '--if-stale'], {
      cwd: bench.REPO_ROOT,
      stdio: 'inherit',
    });
  const db = await bench.startBenchDatabase({ statements: false });
  const net = await bench.startNetworkProcess({ ledgerCloseMs: LEDGER_MS });
  const usdc = net.assets.find((a) => a.code === 'USDC')!;
  const wallet = Keypair.random();
  await net.fund(wallet.publicKey());
  await net.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const seller = await seedSeller(db, { walletAddress: wallet.publicKey(), domain: 'bench.example.com' });
  const buyers = await fundBuyers(net, 20, '100000');
  const assets = net.assets.map((a) => `${a.code}:${a.issuer}`).join(',');
  const builds = [
    await startBuild('A', path.resolve(treeA), db.url, net.rpcUrl, assets),
    await startBuild('B', path.resolve(treeB), db.url, net.rpcUrl, assets),
  ];
  const resourceId = await createBenchResource(builds[0].api, seller, wallet.publicKey(), usdc, AMOUNT);
  const signer = verifySigner(net, usdc, buyers, {
    payTo: wallet.publicKey(),
    resourceId,
    amount: AMOUNT,
    stroops: STROOPS,
  });
  const sign = async (n: number, corruptSignature: boolean) =>
    (await signer(n, 55, corruptSignature)).map((body) => JSON.stringify(body));
  bench.progress('signing the invalid-signature payloads');
  const invalid = await sign(500, true);
  const cpu: Record<string, Record<'invalid' | 'valid', number[]>> = {
    A: { invalid: [], valid: [] },
    B: { invalid: [], valid: [] },
  };
  // Round 0, not recorded: each build's first requests of each kind (JIT compilation, inline caches, the first
  // statements' plans, the validator's first build of a route) weighed on round 1 only, and unequally on the builds.
  for (let round = WARMUP_SECONDS > 0 ? -1 : 0; round < ROUNDS; round++) {
    const seconds = round < 0 ? WARMUP_SECONDS : SECONDS;
    // fresh valid payloads per round (each verifies once), signed before the round's clocks start
    const valid = await sign(Math.ceil(600 * seconds), false);
    let nextValid = 0;
    const order = round % 2 === 0 ? builds : [...builds].reverse();
    for (const kind of ['invalid', 'valid'] as const) {
      for (const b of order) {
        let n = 0;
        const send =
          kind === 'invalid'
            ? () => b.api.request('POST', '/v1/verify', invalid[n++ % invalid.length])
            : () =>
                b.api.request('POST', '/v1/verify', valid[nextValid++], {
                  authorization: `Bearer ${seller.apiKey}`,
                  'idempotency-key': crypto.randomUUID(),
                });
        const r = await bench.cpuPerRequest({ service: b.pid }, () =>
          closedLoop({
            concurrency: CONCURRENCY,
            maxRequests: kind === 'valid' ? valid.length - nextValid : 1e9,
            maxSeconds: seconds,
            send,
            isOk: (a) => (kind === 'invalid' ? a.status === 422 : a.status === 200),
          }),
        );
        if (r.failed > 0) throw new Error(`${b.name} ${kind}: ${r.failed} failed (${r.firstFailure})`);
        if (round >= 0) cpu[b.name][kind].push(r.cpuMs.service);
      }
    }
    if (round < 0) {
      bench.progress(`warm-up round, ${WARMUP_SECONDS} s per kind and build, not recorded (load ${loadAverage()})`);
      continue;
    }
    bench.progress(
      `round ${round + 1}/${ROUNDS} (load ${loadAverage()}): ` +
        (['invalid', 'valid'] as const)
          .map((k) => `${k} A ${cpu.A[k].at(-1)!.toFixed(3)} / B ${cpu.B[k].at(-1)!.toFixed(3)} ms`)
          .join(', '),
    );
  }
  const median = (xs: number[]) =>
    percentile(
      [...xs].sort((x, y) => x - y),
      50,
    );
  console.log(`\nA = ${treeA}\nB = ${treeB}`);
  for (const kind of ['invalid', 'valid'] as const) {
    const ratios = cpu.B[kind].map((b, i) => b / cpu.A[kind][i]);
    const wins = ratios.filter((r) => r < 1).length;
    console.log(
      `${kind === 'invalid' ? 'invalid-signature refusal' : 'valid verify'}: service CPU per request, median of ` +
        `${ROUNDS} alternating rounds: A ${median(cpu.A[kind]).toFixed(3)} ms, B ${median(cpu.B[kind]).toFixed(3)} ` +
        `ms; B ÷ A within each round: ${ratios.map((r) => r.toFixed(2)).join(' ')}: median ` +
        `${median(ratios).toFixed(2)} (B lower in ${wins} of ${ROUNDS} rounds)`,
    );
  }
}

const loadAverage = () => {
  try {
    return execFileSync('cat', ['/proc/loadavg'], { encoding: 'utf8' }).split(' ')[0];
  } catch {
    return '?';
  }
};

bench.runBench(main);
