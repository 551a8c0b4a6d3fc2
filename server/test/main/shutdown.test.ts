import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase } from '../support/database';
import { freePort } from '../support/free-port';

describe('the server process (main.ts)', () => {
  it('starts with the local network, serves /health, and on SIGTERM drains and exits 0', async () => {
    const database = await createTestDatabase();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'main-test-'));
    const port = await freePort();
    // As `npm run dev` runs it (`node --import tsx`; `npm start` runs the build: compiled-start.test.ts): the tsx CLI
    // would relay SIGTERM to a child of its own and SIGKILL
    // it when it does not acknowledge within ~30 ms, which a loaded machine does not (exit 143).
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: String(port),
        DATA_DIR: dataDir,
        LOCAL_NETWORK_PORT: '0',
        LOCAL_NETWORK_LEDGER_CLOSE_MS: '1000',
        OPERATOR_API_KEY: 'op_key_for_the_shutdown_test_0000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    child.stdout.on('data', (d) => (logs += d));
    child.stderr.on('data', (d) => (logs += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      let health: Response | null = null;
      for (let i = 0; i < 120 && !health; i++) {
        await new Promise((r) => setTimeout(r, 500));
        health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
      }
      expect(health?.status).toBe(200);
      expect(((await health!.json()) as { status: string }).status).toBe('ok');
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(logs).toContain('"msg":"stopped"');
      expect(logs).not.toContain('op_key_for_the_shutdown_test');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
