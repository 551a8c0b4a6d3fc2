/**
 * The processes of a benchmark run, each separate from the load generator (the bench process):
 *   - the bench's own embedded PostgreSQL (a child `postgres` server under a temporary data folder);
 *   - the local Stellar network (`local-network/src/cli.ts` in its own Node process);
 *   - the service (`server/src/main.ts` in its own Node process, configured through its environment only).
 * Everything listens on 127.0.0.1, port 0; the service's port is read from /proc (it logs its configured port, 0).
 * Every child is stopped by the bench by its pid, and killed if the bench itself dies. Reusable by every bench
 * (bench:verify, bench:search, bench:catalog, bench:settle).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../server/src/data/embedded-database';

export const REPO_ROOT = path.resolve(__dirname, '../..');

/** Prints a progress line with the seconds since the bench started. */
const T0 = Date.now();
export function progress(message: string): void {
  console.log(`[${((Date.now() - T0) / 1000).toFixed(1).padStart(6)} s] ${message}`);
}

/**
 * The source tree the network and the service run from. Default: this working tree. BENCH_SERVICE_TREE=<git revision>
 * (HEAD, a commit id, a branch) runs them from that commit instead, exported with `git archive` into a temporary
 * folder that links this tree's node_modules: useful while the working tree, or the last commit, holds someone's
 * half-done change. A path to an existing folder runs them from that checkout.
 */
let treeRoot: string | null = null;
export function serviceTree(): string {
  if (treeRoot) return treeRoot;
  const wanted = process.env.BENCH_SERVICE_TREE;
  if (!wanted) return (treeRoot = REPO_ROOT);
  if (fs.existsSync(wanted) && fs.statSync(wanted).isDirectory()) return (treeRoot = path.resolve(wanted));
  if (!/^[\w./~^-]{1,100}$/.test(wanted)) throw new Error('BENCH_SERVICE_TREE must be a git revision or a folder');
  const commit = execFileSync('git', ['rev-parse', '--short', '--verify', `${wanted}^{commit}`], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  }).trim();
  const dir = tempDir('bench-tree-');
  execFileSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C '${dir}'`], { cwd: REPO_ROOT });
  for (const nm of [
    'node_modules',
    'server/node_modules',
    'sdk-buyer/node_modules',
    'sdk-seller/node_modules',
    'openapi/node_modules',
    'local-network/node_modules',
  ]) {
    if (fs.existsSync(path.join(REPO_ROOT, nm))) fs.symlinkSync(path.join(REPO_ROOT, nm), path.join(dir, nm));
  }
  progress(`running the network and the service from commit ${commit} (exported to ${dir})`);
  return (treeRoot = dir);
}

/** A temporary folder removed when the bench exits. */
const tempDirs: string[] = [];
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

/** Copies a file out of the temporary folders into .data/bench/ (git-ignored), answering the new path. */
export function keepFile(file: string, name: string): string {
  const dir = path.join(REPO_ROOT, '.data', 'bench');
  fs.mkdirSync(dir, { recursive: true });
  const target = path.join(dir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}${path.extname(file)}`);
  fs.copyFileSync(file, target);
  return path.relative(REPO_ROOT, target);
}

// ---------------------------------------------------------------------------------------------------------------
// Child processes

const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void>> = [];

/** Runs `fn` when the bench stops (normally or on SIGINT/SIGTERM), newest first. */
export function onStop(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

let stopping: Promise<void> | null = null;
/** Stops everything the bench started: registered cleanups (newest first), leftover children, temp folders. */
export function stopAll(): Promise<void> {
  if (stopping) return stopping;
  stopping = (async () => {
    for (const fn of cleanups.reverse())
      await fn().catch((err: unknown) => console.error('cleanup:', (err as Error).message));
    for (const child of children) if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
    for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  })();
  return stopping;
}

process.on('exit', () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the bench's processes`);
    void stopAll().finally(() => process.exit(130));
  });
}

/** Runs a bench's main: stops every process it started, then exits 0 (or 1 with the error). */
export function runBench(main: () => Promise<void>): void {
  main().then(
    async () => {
      await stopAll();
      process.exit(0);
    },
    async (err: unknown) => {
      console.error(err instanceof Error ? (err.stack ?? err.message) : err);
      await stopAll();
      process.exit(1);
    },
  );
}

export interface NodeProcess {
  pid: number;
  child: ChildProcess;
  /** The last ~64 KiB of its stdout+stderr. */
  output(): string;
  /** Resolves with the first stdout line matching `re`; rejects if the process exits first or after `timeoutMs`. */
  waitForLine(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then SIGKILL after `graceMs`. Resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * Starts a TypeScript file in its own Node process (through tsx's loader), from the repository root; `tsx: false`
 * runs a JavaScript file with plain node.
 */
export function startNodeProcess(
  file: string,
  opts: {
    env: Record<string, string>;
    /** Default true: load tsx (TypeScript). */
    tsx?: boolean;
    nodeArgs?: string[];
    args?: string[];
    evalCode?: string;
    name: string;
    cwd?: string;
  },
): NodeProcess {
  const child = spawn(
    process.execPath,
    [
      ...(opts.nodeArgs ?? []),
      ...(opts.tsx === false ? [] : ['--import', 'tsx']),
      ...(opts.evalCode ? ['-e', opts.evalCode] : [file]),
      ...(opts.args ?? []),
    ],
    {
      cwd: opts.cwd ?? serviceTree(),
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? os.tmpdir(), NODE_ENV: 'production', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  if (!child.pid) throw new Error(`${opts.name} did not start`);
  children.add(child);
  let out = '';
  let pendingLine = '';
  const lineWaiters: Array<{ re: RegExp; resolve: (m: RegExpMatchArray) => void }> = [];
  const keep = (chunk: Buffer) => {
    out = (out + chunk.toString('utf8')).slice(-65_536);
  };
  child.stdout!.on('data', (chunk: Buffer) => {
    keep(chunk);
    const lines = (pendingLine + chunk.toString('utf8')).split('\n');
    pendingLine = lines.pop() ?? '';
    for (const line of lines) {
      for (let i = lineWaiters.length - 1; i >= 0; i--) {
        const m = lineWaiters[i].re.exec(line);
        if (m) lineWaiters.splice(i, 1)[0].resolve(m);
      }
    }
  });
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => (children.delete(child), resolve(code))),
  );
  return {
    pid: child.pid,
    child,
    output: () => out,
    waitForLine(re, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${opts.name}: no line matching ${re} within ${timeoutMs} ms\n${out.slice(-4000)}`)),
          timeoutMs,
        );
        lineWaiters.push({ re, resolve: (m) => (clearTimeout(timer), resolve(m)) });
        void exited.then(
          (code) => (
            clearTimeout(timer),
            reject(new Error(`${opts.name} exited (${code}) before printing ${re}\n${out.slice(-4000)}`))
          ),
        );
      });
    },
    async stop(graceMs = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      process.kill(child.pid!, 'SIGTERM');
      const timer = setTimeout(() => child.exitCode === null && process.kill(child.pid!, 'SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Resident set size of a process, from /proc/<pid>/status (VmRSS now, VmHWM the peak), in MiB. */
export function rssOf(pid: number): { rssMiB: number; peakMiB: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
  } catch {
    return { rssMiB: 0, peakMiB: 0 };
  }
}

/** The pids of a process's children (all its threads' children), from /proc. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
      const text = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text) out.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // the process exited meanwhile
  }
  return out;
}

/**
 * RSS of a process and its Node descendants (a service run with WEB_CONCURRENCY > 1 is a primary and its workers).
 * tsx's esbuild helper (a child of every `node --import tsx` process, ~12 MiB) is not counted: it belongs to how the
 * bench runs the TypeScript, as before this counted the service's own process only.
 */
function treeRss(pid: number): { totalMiB: number; processes: number; largestMiB: number } {
  let totalMiB = 0;
  let largestMiB = 0;
  let processes = 0;
  const queue = [pid];
  while (queue.length && processes < 256) {
    const p = queue.shift()!;
    let comm: string;
    try {
      comm = fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (comm === 'esbuild') continue;
    const mib = rssOf(p).rssMiB;
    if (mib > 0) processes++;
    totalMiB += mib;
    largestMiB = Math.max(largestMiB, mib);
    queue.push(...childPids(p));
  }
  return { totalMiB, processes, largestMiB };
}

/**
 * Samples the RSS of a process and its descendants every `everyMs` until stopped; answers the largest total, the
 * last total, and the largest single process seen (with one process all three describe that process).
 */
export function sampleRss(
  pid: number,
  everyMs = 250,
): { stop(): { maxMiB: number; lastMiB: number; largestProcessMiB: number; processes: number } } {
  const first = treeRss(pid);
  let max = first.totalMiB;
  let last = max;
  let largest = first.largestMiB;
  let processes = first.processes;
  const sample = () => {
    const t = treeRss(pid);
    if (t.totalMiB > 0) last = t.totalMiB;
    max = Math.max(max, t.totalMiB);
    largest = Math.max(largest, t.largestMiB);
    processes = Math.max(processes, t.processes);
  };
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { maxMiB: max, lastMiB: last, largestProcessMiB: largest, processes };
    },
  };
}

/** TCP ports a process listens on, found through its socket inodes in /proc (IPv4 and IPv6). */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // the descriptor closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '0A' && inodes.has(cols[9]))
        ports.add(parseInt(cols[1].split(':').pop()!, 16));
    }
  }
  return [...ports];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------------
// PostgreSQL

export interface BenchDatabase {
  /** Connection string of the bench's database (migrated). */
  url: string;
  /** Whether pg_stat_statements is loaded (BENCH_PROFILE): statementCounts() then answers. */
  statements: boolean;
  /** Forgets the statement counters (pg_stat_statements_reset). */
  resetStatements(): Promise<void>;
  /** Calls per statement since the last reset (this database only; the statement-counting queries excluded). */
  statementCounts(): Promise<
    Array<{ calls: number; totalMs: number; meanMs: number; planTotalMs: number; rows: number; query: string }>
  >;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  stop(): Promise<void>;
}

/**
 * The bench's own embedded PostgreSQL with one migrated database. With `statements`, the server is restarted once
 * with pg_stat_statements preloaded (the bench owns it), so the SQL round trips of a request can be counted.
 */
export async function startBenchDatabase(
  opts: { statements?: boolean; trackPlanning?: boolean; name?: string } = {},
): Promise<BenchDatabase> {
  const dataDir = path.join(tempDir('bench-pg-'), 'data');
  progress(`starting the bench's PostgreSQL in ${dataDir}`);
  let pg: EmbeddedDatabase = await startEmbeddedDatabase({ dataDir, persistent: true });
  if (opts.statements) {
    const admin = new Client({ connectionString: pg.adminUrl });
    await admin.connect();
    await admin.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await admin.query(`ALTER SYSTEM SET pg_stat_statements.track = 'top'`);
    // planTotalMs: total planning time of the statement (0 unless trackPlanning)
    if (opts.trackPlanning) await admin.query(`ALTER SYSTEM SET pg_stat_statements.track_planning = on`);
    await admin.end();
    await pg.stop();
    pg = await startEmbeddedDatabase({ dataDir, persistent: true });
    progress('PostgreSQL restarted with pg_stat_statements (statement counting on)');
  }
  const url = await pg.urlFor(opts.name ?? 'bench');
  const client = new Client({ connectionString: url });
  await client.connect();
  if (opts.statements) await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  // Migrated by the tree the service runs from, in a child process.
  const migrator = startNodeProcess('', {
    name: 'migrations',
    evalCode:
      `require('./server/src/data/database').migrate(process.env.DATABASE_URL).then((a) => { console.log('applied ` +
      `' + a.length); process.exit(0); }, (e) => { console.error(e); process.exit(1); })`,
    env: { DATABASE_URL: url },
  });
  const [, applied] = await migrator.waitForLine(/^applied (\d+)/, 120_000);
  await migrator.stop();
  progress(`migrated (${applied} migrations)`);
  const db: BenchDatabase = {
    url,
    statements: Boolean(opts.statements),
    async resetStatements() {
      if (opts.statements) await client.query('SELECT pg_stat_statements_reset()');
    },
    async statementCounts() {
      if (!opts.statements) return [];
      const { rows } = await client.query(
        `SELECT calls::int AS calls, total_exec_time AS "totalMs", mean_exec_time AS "meanMs",
                total_plan_time AS "planTotalMs", rows::int AS rows, query
           FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
          WHERE d.datname = current_database() AND query NOT ILIKE '%pg_stat_statements%'
          ORDER BY calls DESC`,
      );
      return rows;
    },
    async query(sql, params) {
      return (await client.query(sql, params as unknown[])).rows;
    },
    async stop() {
      await client.end().catch(() => undefined);
      await pg.stop();
    },
  };
  onStop(() => db.stop());
  return db;
}

// ---------------------------------------------------------------------------------------------------------------
// The local network

export interface NetworkAsset {
  code: string;
  issuer: string;
  contractId: string;
}

export interface NetworkProcess {
  pid: number;
  rpcUrl: string;
  baseUrl: string;
  passphrase: string;
  assets: NetworkAsset[];
  /** JSON-RPC call. */
  rpc<T = unknown>(method: string, params?: unknown): Promise<T>;
  latestLedger(): Promise<number>;
  /** Creates and funds an account with XLM (friendbot). */
  fund(address: string): Promise<void>;
  /** Gives an account a trustline and `amount` of `asset` (creating the account when missing). */
  faucet(address: string, asset: string, amount: string): Promise<void>;
  stop(): Promise<void>;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function httpJson<T>(url: string, method: 'GET' | 'POST', body?: unknown): Promise<{ status: number; body: T }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as T });
          } catch {
            reject(new Error(`${method} ${url}: ${res.statusCode} ${text.slice(0, 200)}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** The local network in its own process (plain HTTP, its ledger file under a temporary folder). */
export async function startNetworkProcess(opts: { ledgerCloseMs: number }): Promise<NetworkProcess> {
  const dir = tempDir('bench-net-');
  // Its own package since issue #34; an exported older tree (BENCH_SERVICE_TREE) has it inside the server.
  const cli = fs.existsSync(path.join(serviceTree(), 'local-network/src/cli.ts'))
    ? 'local-network/src/cli.ts'
    : 'server/src/ledger/local-network/cli.ts';
  const proc = startNodeProcess(cli, {
    name: 'local network',
    env: {
      LOCAL_NETWORK_HOST: '127.0.0.1',
      LOCAL_NETWORK_PORT: '0',
      LOCAL_NETWORK_LEDGER_CLOSE_MS: String(opts.ledgerCloseMs),
      LOCAL_NETWORK_DATA_FILE: path.join(dir, 'local-network.json'),
    },
  });
  onStop(async () => void (await proc.stop()));
  // The CLI prints everything at once, the last asset's secret line last.
  await proc.waitForLine(/issuer secret/, 60_000);
  await sleep(50);
  const text = proc.output();
  const rpcUrl = /RPC URL:\s+(\S+)/.exec(text)?.[1];
  const passphrase = /passphrase:\s+(.+?)\s+\(serves/.exec(text)?.[1];
  if (!rpcUrl || !passphrase) throw new Error(`could not read the local network's RPC URL:\n${text}`);
  const assets: NetworkAsset[] = [];
  const re = /asset (\S+):\s*\n\s*issuer:\s+(\S+)\s*\n\s*contract id:\s+(\S+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) assets.push({ code: m[1], issuer: m[2], contractId: m[3] });
  const baseUrl = rpcUrl.replace(/\/rpc\/?$/, '');
  let rpcId = 0;
  const net: NetworkProcess = {
    pid: proc.pid,
    rpcUrl,
    baseUrl,
    passphrase,
    assets,
    async rpc<T>(method: string, params?: unknown) {
      const res = await httpJson<{ result?: T; error?: { message: string } }>(rpcUrl, 'POST', {
        jsonrpc: '2.0',
        id: ++rpcId,
        method,
        params,
      });
      if (res.body.error) throw new Error(`${method}: ${res.body.error.message}`);
      return res.body.result as T;
    },
    async latestLedger() {
      return (await net.rpc<{ sequence: number }>('getLatestLedger')).sequence;
    },
    async fund(address) {
      const res = await httpJson<unknown>(`${baseUrl}/friendbot?addr=${address}`, 'GET');
      if (res.status !== 200) throw new Error(`friendbot ${address}: ${res.status} ${JSON.stringify(res.body)}`);
    },
    async faucet(address, asset, amount) {
      const res = await httpJson<unknown>(`${baseUrl}/faucet`, 'POST', { address, asset, amount });
      if (res.status !== 200) throw new Error(`faucet ${address}: ${res.status} ${JSON.stringify(res.body)}`);
    },
    stop: async () => void (await proc.stop()),
  };
  progress(`local network running in its own process (pid ${proc.pid}) at ${rpcUrl}`);
  return net;
}

/**
 * A counting front for the network's JSON-RPC (BENCH_PROFILE): forwards every request and counts JSON-RPC methods,
 * so the ledger round trips per request can be read. Adds one loopback hop, so it is used for profiling only.
 */
export async function startRpcCounter(
  targetRpcUrl: string,
): Promise<{ url: string; counts(): Record<string, number>; millis(): Record<string, number>; reset(): void }> {
  let counts: Record<string, number> = {};
  let millis: Record<string, number> = {};
  const target = new URL(targetRpcUrl);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const started = performance.now();
      let method = `${req.method} ${req.url}`;
      try {
        const parsed = JSON.parse(body.toString('utf8')) as { method?: string } | Array<{ method?: string }>;
        const methods = (Array.isArray(parsed) ? parsed : [parsed]).map((r) => r.method ?? '?');
        method = methods.join('+');
        for (const m of methods) counts[m] = (counts[m] ?? 0) + 1;
      } catch {
        counts[method] = (counts[method] ?? 0) + 1;
      }
      const headers = { ...req.headers, host: target.host, 'content-length': String(body.length) };
      const up = http.request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers, agent },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
          upRes.on('end', () => void (millis[method] = (millis[method] ?? 0) + performance.now() - started));
        },
      );
      up.on('error', () => res.writeHead(502).end());
      up.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onStop(() => new Promise((r) => (server.closeAllConnections(), server.close(() => r()))));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    counts: () => ({ ...counts }),
    /** Total milliseconds the network took to answer, per method (summed over calls). */
    millis: () => ({ ...millis }),
    reset: () => void ((counts = {}), (millis = {})),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The service

export interface ServiceProcess {
  pid: number;
  baseUrl: string;
  operatorApiKey: string;
  output(): string;
  /** Stops it with SIGTERM (graceful shutdown); with a CPU profile, answers the .cpuprofile file written. */
  stop(): Promise<string | null>;
}

/** BENCH_SERVICE_ENV="LOG_REQUESTS=true,RESPONSE_VALIDATION=true": extra settings for the service, last word. */
function serviceEnvFromBench(): Record<string, string> {
  const raw = process.env.BENCH_SERVICE_ENV;
  if (!raw) return {};
  const out: Record<string, string> = {};
  for (const part of raw
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(part);
    if (!m) throw new Error(`BENCH_SERVICE_ENV: expected NAME=value, got "${part}"`);
    out[m[1]] = m[2];
  }
  return out;
}

/**
 * How the service runs: `dist` (default), the compiled JavaScript as `npm start` runs it (server/dist/main.js, built
 * first like `npm start`'s prestart, once per bench, in the tree the service runs from); `tsx`
 * (BENCH_SERVICE_RUNTIME=tsx), server/src/main.ts through tsx as `npm run dev` and the tests run it.
 */
export function serviceRuntime(): 'dist' | 'tsx' {
  const wanted = process.env.BENCH_SERVICE_RUNTIME ?? 'dist';
  if (wanted !== 'dist' && wanted !== 'tsx') throw new Error('BENCH_SERVICE_RUNTIME must be dist or tsx');
  return wanted;
}
let built = false;
function ensureServiceBuild(): void {
  if (built) return;
  const tree = serviceTree();
  progress('building the service if stale (as `npm start` does: the SDKs and the local network, then the server)');
  // The packages the compiled server loads at run time (the SDKs, the local network), when that tree has the step.
  if (fs.existsSync(path.join(tree, 'scripts/build-sdks-if-stale.mjs')))
    execFileSync(process.execPath, ['scripts/build-sdks-if-stale.mjs'], { cwd: tree, stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/build-server.mjs', '--if-stale'], { cwd: tree, stdio: 'inherit' });
  built = true;
}

/**
 * The node flags of `npm start` in the service's tree (server/package.json `"start": "node <flags> dist/main.js"`),
 * so the bench runs the compiled service with exactly the flags `npm start` gives it (BENCH_SERVICE_ENV's
 * NODE_OPTIONS adds to them).
 */
export function npmStartNodeFlags(tree = serviceTree()): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(tree, 'server/package.json'), 'utf8')) as {
    scripts?: { start?: string };
  };
  const m = /^node((?:\s+--[\w-]+(?:=\S+)?)*)\s+dist\/main\.js$/.exec(pkg.scripts?.start ?? '');
  if (!m) throw new Error(`server/package.json's start script is not "node [--flags] dist/main.js"`);
  return m[1].trim() ? m[1].trim().split(/\s+/) : [];
}

/** BENCH_NODE_FLAGS (e.g. "--max-semi-space-size=8 --heap-growing-percent=20"; "" for none) instead of npm start's
 * flags: V8 heap flags are not allowed in NODE_OPTIONS, so this is how a bench compares them. */
function benchNodeFlags(): string[] {
  const wanted = process.env.BENCH_NODE_FLAGS;
  if (wanted === undefined) return npmStartNodeFlags();
  const flags = wanted.split(/\s+/).filter(Boolean);
  for (const f of flags) if (!/^--[\w-]+(=\S+)?$/.test(f)) throw new Error(`BENCH_NODE_FLAGS: not a node flag: ${f}`);
  return flags;
}

export const BENCH_OPERATOR_KEY = 'mk_op_bench_operator_key_0123456789abcdef';

/**
 * Starts the service (server/dist/main.js, or server/src/main.ts with BENCH_SERVICE_RUNTIME=tsx: serviceRuntime())
 * in its own process against the bench's database and the network process, with a rate limit high enough not to
 * refuse the bench and request logging off. `cpuProfile` runs it under `node --cpu-prof`. `env` adds or overrides
 * settings (e.g. STELLAR_TESTNET_CHANNEL_SECRETS for bench:settle), and BENCH_SERVICE_ENV overrides both (to compare
 * configurations from the command line).
 */
export async function startServiceProcess(opts: {
  databaseUrl: string;
  rpcUrl: string;
  /** The network's assets (its own issuers), configured as STELLAR_TESTNET_ASSETS. */
  assets: NetworkAsset[];
  cpuProfile?: boolean;
  env?: Record<string, string>;
}): Promise<ServiceProcess> {
  const dir = tempDir('bench-svc-');
  const profDir = path.join(dir, 'cpuprofile');
  const runtime = serviceRuntime();
  if (runtime === 'dist') ensureServiceBuild();
  const proc = startNodeProcess(runtime === 'dist' ? 'server/dist/main.js' : 'server/src/main.ts', {
    name: 'service',
    tsx: runtime === 'tsx',
    nodeArgs: [
      ...(runtime === 'dist' ? benchNodeFlags() : []),
      ...(opts.cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, '--cpu-prof-interval=500'] : []),
    ],
    env: {
      APP_ENV: 'bench',
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dir,
      DATABASE_URL: opts.databaseUrl,
      LOCAL_NETWORK: 'false',
      STELLAR_TESTNET_RPC_URL: opts.rpcUrl,
      STELLAR_TESTNET_ASSETS: opts.assets.map((a) => `${a.code}:${a.issuer}`).join(','),
      OPERATOR_API_KEY: BENCH_OPERATOR_KEY,
      RATE_LIMIT_REQUESTS: '1000000',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      LOG_REQUESTS: 'false',
      RESPONSE_VALIDATION: 'false',
      ...opts.env,
      ...serviceEnvFromBench(),
    },
  });
  let stopped = false;
  const stop = async (): Promise<string | null> => {
    if (stopped) return null;
    stopped = true;
    const code = await proc.stop();
    if (code !== 0) console.error(`service exited with ${code}; its last output:\n${proc.output().slice(-2000)}`);
    if (!opts.cpuProfile || !fs.existsSync(profDir)) return null;
    const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    return file ? path.join(profDir, file) : null;
  };
  onStop(async () => void (await stop()));
  const deadline = Date.now() + 180_000;
  let baseUrl = '';
  while (!baseUrl) {
    if (proc.child.exitCode !== null) {
      const hint = process.env.BENCH_SERVICE_TREE
        ? ''
        : '\n(if the working tree holds a half-done change, BENCH_SERVICE_TREE=HEAD runs the last commit)';
      throw new Error(
        `the service exited (${proc.child.exitCode}) while starting:\n${proc.output().slice(-4000)}${hint}`,
      );
    }
    if (Date.now() > deadline)
      throw new Error(`the service did not listen within 180 s:\n${proc.output().slice(-4000)}`);
    const [port] = listeningPorts(proc.pid);
    if (port) {
      const candidate = `http://127.0.0.1:${port}`;
      const health = await httpJson<unknown>(`${candidate}/health`, 'GET').catch(() => null);
      if (health) baseUrl = candidate;
    }
    if (!baseUrl) await sleep(200);
  }
  progress(
    `service (${runtime === 'dist' ? 'server/dist/main.js' : 'server/src/main.ts through tsx'}) running in its own ` +
      `process (pid ${proc.pid}${opts.cpuProfile ? ', under --cpu-prof' : ''}) at ${baseUrl}`,
  );
  return { pid: proc.pid, baseUrl, operatorApiKey: BENCH_OPERATOR_KEY, output: proc.output, stop };
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat (0 once it is gone). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * The pids of a service: the process itself and, with WEB_CONCURRENCY > 1, its service processes (node:cluster
 * workers), without tsx's esbuild helper.
 */
export function serviceProcessPids(pid: number): number[] {
  const out: number[] = [];
  const queue = [pid];
  while (queue.length && out.length < 256) {
    const p = queue.shift()!;
    try {
      if (fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'esbuild') continue;
    } catch {
      continue;
    }
    out.push(p);
    queue.push(...childPids(p));
  }
  return out;
}

/**
 * CPU milliseconds per request each process spent while `run` ran (`requests` of them). A list of pids (a service
 * and its workers: serviceProcessPids) counts as one process, their CPU summed.
 */
export async function cpuPerRequest<T extends { ok: number; failed: number }>(
  pids: Record<string, number | number[]>,
  run: () => Promise<T>,
): Promise<T & { cpuMs: Record<string, number> }> {
  const cpuOf = (p: number | number[]) => (Array.isArray(p) ? p : [p]).reduce((a, pid) => a + cpuSeconds(pid), 0);
  const before = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, cpuOf(p)]));
  const result = await run();
  const n = Math.max(1, result.ok + result.failed);
  const cpuMs = Object.fromEntries(Object.entries(pids).map(([k, p]) => [k, ((cpuOf(p) - before[k]) * 1000) / n]));
  return { ...result, cpuMs };
}
