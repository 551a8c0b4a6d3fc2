#!/usr/bin/env node
// Compiles the server (server/src, TypeScript) into server/dist (CommonJS JavaScript), which `npm start` runs with
// plain node: `npm run build -w server` always builds; `--if-stale` (the root `prepare` that `npm ci` runs, and
// `npm start`'s prestart, and the tests that start the server in a child process: server/test/reliability/support/
// main-process.ts) builds only when the build is missing or a source is newer than it. `npm run dev` and the tests
// that load the server in process run the TypeScript (tsx, Jest's transform) and never need this.
//
// The build needs the buyer SDK's dist/ (the server's `@paid-api-marketplace/sdk-buyer/mcp` import is type-checked
// against its declarations and, at run time, loaded from it), and so the local network's (`main.ts` starts
// `@paid-api-marketplace/local-network` in process as the development default), which the root `prepare` builds
// first.
//
// tsc writes into server/dist.next/, which then replaces server/dist/ in one rename: a build that fails leaves the
// previous one whole, and a process reading server/dist never sees half a build. server/dist/.build.json records
// when the build started; a source changed after that moment makes the next `--if-stale` build again.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const server = path.join(root, 'server');
const dist = path.join(server, 'dist');
const next = path.join(server, 'dist.next');
const stampFile = path.join(dist, '.build.json');
/** What the build reads: the server's sources and the compiler settings; and this script. */
const SOURCES = [
  'server/src',
  'server/tsconfig.json',
  'server/tsconfig.build.json',
  'tsconfig.base.json',
  'scripts/build-server.mjs',
];

const mtime = (p) => fs.statSync(p, { throwIfNoEntry: false })?.mtimeMs ?? 0;
const newest = (p) => {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(
    st.mtimeMs,
    ...fs.readdirSync(p, { recursive: true, encoding: 'utf8' }).map((f) => mtime(path.join(p, f))),
  );
};

/** Why the build is stale, or null when it is fresh. */
export function staleReason() {
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(stampFile, 'utf8'));
  } catch {
    return 'server/dist has no build';
  }
  if (!fs.existsSync(path.join(dist, 'main.js'))) return 'server/dist/main.js is missing';
  const changed = SOURCES.find((s) => newest(path.join(root, s)) > stamp.startedAtMs);
  return changed ? `${changed} changed since the last build` : null;
}

function compile(outDir, startedAtMs) {
  fs.rmSync(outDir, { recursive: true, force: true });
  const tsc = path.join(path.dirname(fileURLToPath(import.meta.resolve('typescript/package.json'))), 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', path.join(server, 'tsconfig.build.json'), '--outDir', outDir], {
    cwd: server,
    stdio: 'inherit',
  });
  fs.writeFileSync(
    path.join(outDir, '.build.json'),
    `${JSON.stringify({ startedAtMs, startedAt: new Date(startedAtMs).toISOString() })}\n`,
  );
}

/**
 * Runs `fn` holding .data/server-build.lock: two builds at once (two test workers each making sure the build is
 * current before starting it, or `npm start` beside them) would both write server/dist.next. A waiter checks the
 * staleness again once it holds the lock, so the second finds the first one's build current. A lock left by a process
 * that died is taken over.
 */
function withBuildLock(fn) {
  const lock = path.join(root, '.data', 'server-build.lock');
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + 600_000; // a bound on a hang, not on the build's speed
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    const holder = holderOf(lock);
    if (holder === null) continue; // released meanwhile
    if (holder && !alive(holder)) fs.rmSync(lock, { force: true });
    else if (Date.now() > deadline) throw new Error(`${lock} still held by process ${holder} after 10 minutes`);
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
  }
  try {
    fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/** The process id in the lock (0 while its holder has not written it yet), or null when the lock is gone. */
function holderOf(lock) {
  try {
    return Number(fs.readFileSync(lock, 'utf8'));
  } catch {
    return null;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

export function build() {
  compile(next, Date.now());
  fs.rmSync(dist, { recursive: true, force: true });
  fs.renameSync(next, dist);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // --out-dir DIR (tests): compile into DIR (a sibling of server/dist, so paths relative to the build hold) and
  // leave server/dist alone.
  const outDir = process.argv.indexOf('--out-dir');
  if (outDir > 0) {
    compile(path.resolve(process.argv[outDir + 1]), Date.now());
    process.exit(0);
  }
  const ifStale = process.argv.includes('--if-stale');
  withBuildLock(() => {
    const reason = ifStale ? staleReason() : 'asked';
    if (reason) {
      if (ifStale) console.error(`${reason}: building the server (npm run build -w server)`);
      build();
    }
  });
}
