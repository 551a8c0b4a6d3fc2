/**
 * Issue #22 item 1: `npm start` fails loudly. A taken port, an unreachable DATABASE_URL and an unreachable
 * configured RPC each stop the real main.ts with one clear line on stderr and a non-zero exit (it used to log
 * "listening" on a taken port and run on, serving nothing).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../support/free-port';
import { ensureServerBuild, npmStartCommand } from '../reliability/support/main-process';

/**
 * Runs main.ts as `npm start` does (the current build, server/dist/main.js, with npm start's node flags; built first
 * if a source changed, as its prestart does) with the given environment until it exits (killed after 150 s: a bound
 * on a hang, not on speed); stdout and stderr separately. The build, not tsx: tsx compiled the whole server at each of
 * the three starts (about 1 s more CPU per start).
 */
async function runMain(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  await ensureServerBuild();
  const { nodeFlags, entry } = npmStartCommand();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'startup-test-'));
  const child = spawn(process.execPath, [...nodeFlags, entry], {
    cwd: path.resolve(__dirname, '../..'),
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      LOCAL_NETWORK_PORT: '0',
      OPERATOR_API_KEY: 'op_key_for_the_startup_test_00000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), 150_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(killer);
  fs.rmSync(dataDir, { recursive: true, force: true });
  return { code, stderr, stdout };
}

describe('npm start fails loudly', () => {
  it(
    'when the port is already taken by another program, it exits 3 with one line naming the port and PORT, and ' +
      'never logs listening',
    async () => {
      const other = net.createServer();
      const port: number = await new Promise((resolve) =>
        other.listen(0, '127.0.0.1', () => resolve((other.address() as net.AddressInfo).port)),
      );
      try {
        const run = await runMain({ PORT: String(port), DATABASE_URL: 'postgres://u:secret-pw@127.0.0.1:1/db' });
        expect(run.code).toBe(3);
        expect(run.stderr.trim().split('\n')).toEqual([
          `cannot start: port ${port} on 127.0.0.1 is already in use by another program; stop it or set PORT to a ` +
            `free port`,
        ]);
        expect(run.stdout + run.stderr).not.toContain('listening');
      } finally {
        other.close();
      }
    },
    180_000,
  );

  it(
    'when DATABASE_URL points at no database, it exits 3 with ' + 'one line naming the host, never the password',
    async () => {
      const dbPort = await freePort();
      const run = await runMain({
        PORT: String(await freePort()),
        DATABASE_URL: `postgres://user:secret-pw@127.0.0.1:${dbPort}/marketplace`,
      });
      expect(run.code).toBe(3);
      expect(run.stderr.trim().split('\n')).toEqual([
        `cannot start: the database in DATABASE_URL (127.0.0.1:${dbPort}) is unreachable (ECONNREFUSED); start ` +
          `PostgreSQL or unset DATABASE_URL to use the embedded one`,
      ]);
      expect(run.stderr).not.toContain('secret-pw');
    },
    180_000,
  );

  it(
    'when the configured testnet RPC does not answer, it exits 3 with one line naming STELLAR_TESTNET_RPC_URL ' +
      'and only its origin',
    async () => {
      const rpcPort = await freePort();
      const run = await runMain({
        PORT: String(await freePort()),
        STELLAR_TESTNET_RPC_URL: `http://127.0.0.1:${rpcPort}/rpc?apiKey=provider-secret`,
      });
      expect(run.code).toBe(3);
      expect(run.stderr.trim().split('\n')).toEqual([
        `cannot start: the Soroban RPC in STELLAR_TESTNET_RPC_URL (http://127.0.0.1:${rpcPort}) is unreachable (connection failed to getHealth); fix or unset STELLAR_TESTNET_RPC_URL`,
      ]);
      expect(run.stderr).not.toContain('provider-secret');
    },
    180_000,
  );
});
