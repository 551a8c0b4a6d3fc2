import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase } from '../../server/test/support/database';
import { freePort } from '../../server/test/support/free-port';

export interface StartedMain {
  baseUrl: string;
  localNetworkUrl: string;
  logs(): string;
  stop(): Promise<void>;
}

/**
 * `npm start` as a newcomer runs it: the real server/src/main.ts in its own process, with the local network in
 * process, on free ports, its own data folder and a fresh database. `env` adds settings (e.g. LOCAL_DEV_DOMAINS).
 * Through tsx, so the sources under test run, never a stale build (`npm start` runs the same code compiled:
 * server/test/main/compiled-start.test.ts).
 */
export async function startMain(env: Record<string, string> = {}): Promise<StartedMain> {
  const database = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'npm-start-'));
  const port = await freePort();
  const rpcPort = await freePort();
  const child: ChildProcess = spawn(process.execPath, [require.resolve('tsx/cli'), 'src/main.ts'], {
    cwd: path.resolve(__dirname, '../../server'),
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOCAL_NETWORK_PORT: String(rpcPort),
      LOCAL_NETWORK_LEDGER_CLOSE_MS: '1000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let logs = '';
  child.stdout!.on('data', (d) => (logs += d));
  child.stderr!.on('data', (d) => (logs += d));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    await database.drop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) break;
    const ok = await fetch(`${baseUrl}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { baseUrl, localNetworkUrl: `http://127.0.0.1:${rpcPort}`, logs: () => logs, stop };
    await new Promise((r) => setTimeout(r, 500));
  }
  await stop();
  throw new Error(`npm start did not become healthy:\n${logs}`);
}

/** Runs an npm script of the repository root (as `npm run <script>` would) and returns its exit code and output. */
export async function runNpmScript(
  script: string,
  env: Record<string, string>,
  timeoutMs = 240_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', ['run', '--silent', script], {
    cwd: path.resolve(__dirname, '../..'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(killer);
  return { code, stdout, stderr };
}
