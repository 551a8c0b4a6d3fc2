import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Asset, Keypair, rpc } from '@stellar/stellar-sdk';
import { TESTNET_PASSPHRASE } from '../../../src/config';
import type { FacilitatorEnv } from '../../facilitator/helpers';
import { freePort } from '../../support/free-port';

const PORT_TAKEN = 'is already in use by another program';
const SERVER = path.resolve(__dirname, '../../..');
const ROOT = path.resolve(SERVER, '..');

/**
 * What `npm start` runs in server/ (its `start` script, `node <flags> dist/main.js`): the node flags and the entry.
 */
export function npmStartCommand(): { nodeFlags: string[]; entry: string; script: string } {
  const pkg = JSON.parse(fs.readFileSync(path.join(SERVER, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const words = pkg.scripts.start.split(/\s+/);
  return { nodeFlags: words.slice(1, -1), entry: words[words.length - 1], script: pkg.scripts.start };
}

let build: Promise<void> | undefined;

/**
 * Makes sure server/dist is the build of the current sources (`scripts/build-server.mjs --if-stale`, as `npm start`'s
 * prestart does: a no-op after `npm ci`, which built it; a build when a source changed since, e.g. while developing),
 * so a test never starts stale code. Once per test file; concurrent callers in other workers wait on the script's
 * lock and find the build current.
 */
export function ensureServerBuild(): Promise<void> {
  build ??= new Promise<void>((resolve, reject) =>
    execFile(
      process.execPath,
      [path.join(ROOT, 'scripts/build-server.mjs'), '--if-stale'],
      { cwd: ROOT, timeout: 600_000 },
      (err, _stdout, stderr) =>
        err ? reject(new Error(`scripts/build-server.mjs --if-stale failed: ${err.message}\n${stderr}`)) : resolve(),
    ),
  );
  return build;
}

/**
 * The server in a child process as `npm start` runs it (the current build of `server/src/main.ts`, server/dist/main.js,
 * with npm start's node flags), with its own local network, on the given database.
 */
export interface MainProcess {
  child: ChildProcess;
  port: number;
  baseUrl: string;
  rpcUrl: string;
  /** Its DATA_DIR (the embedded PostgreSQL's folder is `postgres/` in it when no database URL was given). */
  dataDir: string;
  operatorKey: string;
  logs(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when a log line containing `text` has been written (rejects after `timeoutMs`, a bound only). */
  waitForLog(text: string, timeoutMs?: number): Promise<void>;
  /** SIGKILL if still alive, and remove the data folder. */
  cleanup(): Promise<void>;
}

/**
 * Starts main.ts on a free port; when another program took the port before main.ts bound it, again on another.
 * Without `databaseUrl` it starts its own embedded PostgreSQL in its data folder, as `npm start` does.
 */
export async function startMainProcess(opts: {
  databaseUrl?: string;
  env?: Record<string, string>;
}): Promise<MainProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startMainProcessOn(await freePort(), opts);
    } catch (err) {
      if (attempt >= 3 || !String((err as Error).message).includes(PORT_TAKEN)) throw err;
    }
  }
}

async function startMainProcessOn(
  port: number,
  opts: { databaseUrl?: string; env?: Record<string, string> },
): Promise<MainProcess> {
  await ensureServerBuild();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'reliability-main-'));
  const operatorKey = `op_key_reliability_${Keypair.random().publicKey().slice(1, 20)}`;
  // The build, not `node --import tsx src/main.ts` (`npm run dev`, started by main/shutdown.test.ts): tsx compiles the
  // whole server at every start (2.5 s of CPU against 1.5 s), and these files start it up to seven times.
  const { nodeFlags, entry } = npmStartCommand();
  const child = spawn(process.execPath, [...nodeFlags, entry], {
    cwd: SERVER,
    env: {
      ...process.env,
      DATABASE_URL: opts.databaseUrl ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOCAL_NETWORK_PORT: '0',
      LOCAL_NETWORK_LEDGER_CLOSE_MS: '1000',
      LOCAL_NETWORK_DATA_FILE: path.join(dataDir, 'local-network.json'),
      OPERATOR_API_KEY: operatorKey,
      RATE_LIMIT_REQUESTS: '1000000',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let logs = '';
  const waiters: Array<{ text: string; resolve: () => void }> = [];
  const onData = (d: Buffer) => {
    logs += d;
    for (const w of [...waiters]) {
      if (logs.includes(w.text)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const waitForLog = (text: string, timeoutMs = 120_000) =>
    new Promise<void>((resolve, reject) => {
      if (logs.includes(text)) return resolve();
      const timer = setTimeout(
        () => reject(new Error(`no log line with ${text} within ${timeoutMs} ms; logs:\n${logs.slice(-3000)}`)),
        timeoutMs,
      );
      waiters.push({
        text,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      void exited.then(({ code }) => {
        clearTimeout(timer);
        if (!logs.includes(text))
          reject(new Error(`main.ts exited (${code}) before logging ${text}; logs:\n${logs.slice(-3000)}`));
      });
    });
  await waitForLog('"msg":"listening"').catch((err: unknown) => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const started = logs.split('\n').find((l) => l.includes('local network started'));
  const rpcUrl = started ? (JSON.parse(started) as { rpcUrl: string }).rpcUrl : '';
  return {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    rpcUrl,
    dataDir,
    operatorKey,
    logs: () => logs,
    exited,
    waitForLog,
    async cleanup() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Enough of a FacilitatorEnv to sign payments with the facilitator test helpers against a local network reached
 * over its RPC URL (friendbot and faucet over HTTP), and the service at its base URL. `refresh()` reads the latest
 * ledger.
 */
export async function remoteLocalNetwork(
  rpcUrl: string,
  serviceBaseUrl: string,
): Promise<{ env: FacilitatorEnv; refresh(): Promise<void> }> {
  const base = rpcUrl.replace(/\/rpc$/, '');
  const server = new rpc.Server(rpcUrl, { allowHttp: true });
  const info = (await (await fetch(`${base}/`)).json()) as { assets?: Array<{ code: string; issuer: string }> };
  const usdcInfo = info.assets?.find((a) => a.code === 'USDC');
  if (!usdcInfo) throw new Error(`the local network at ${base} lists no USDC: ${JSON.stringify(info).slice(0, 300)}`);
  let latest = (await server.getLatestLedger()).sequence;
  const usdc = {
    code: 'USDC',
    issuer: usdcInfo.issuer,
    contractId: new Asset('USDC', usdcInfo.issuer).contractId(TESTNET_PASSPHRASE),
  };
  const network = {
    rpcUrl,
    networkPassphrase: TESTNET_PASSPHRASE,
    latestLedger: () => latest,
    async fundAccount(address: string) {
      const r = await fetch(`${base}/friendbot?addr=${address}`);
      if (!r.ok) throw new Error(`friendbot: ${r.status} ${await r.text()}`);
    },
    async faucet(address: string, asset: string, amount: string) {
      const r = await fetch(`${base}/faucet`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ address, asset, amount }),
      });
      if (!r.ok) throw new Error(`faucet: ${r.status} ${await r.text()}`);
    },
  };
  return {
    // supertest takes a base URL where it takes an app: the facilitator helpers then talk to the child process.
    env: { network, usdc, svc: { app: serviceBaseUrl } } as unknown as FacilitatorEnv,
    async refresh() {
      latest = (await server.getLatestLedger()).sequence;
    },
  };
}
