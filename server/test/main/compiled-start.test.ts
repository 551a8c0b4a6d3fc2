// Issue #31: `npm start` runs the compiled JavaScript (server/dist, written by scripts/build-server.mjs), not
// TypeScript through tsx. The build is the one `npm ci` (the root `prepare`) and `npm start`'s prestart make, made
// current here the same way (`build-server.mjs --if-stale`: nothing to do after `npm ci`, a build when a source
// changed since), then started with npm start's command line. The compile itself is what `npm ci` and every stale
// build run: a build that fails leaves no current build, so this test then fails at its first step. (It used to
// compile a build of its own, ~15 s of CPU, which proved no more.)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase } from '../support/database';
import { freePort } from '../support/free-port';
import { ensureServerBuild, npmStartCommand } from '../reliability/support/main-process';

const SERVER = path.resolve(__dirname, '../..');

describe('the compiled server (what npm start runs)', () => {
  it(
    'the build writes the file server/package.json names as main, and plain node runs it: /health, /docs, ' +
      '/dashboard and /mcp answer, SIGTERM exits 0',
    async () => {
      await ensureServerBuild();
      const main = JSON.parse(fs.readFileSync(path.join(SERVER, 'package.json'), 'utf8')) as { main: string };
      expect(main.main).toBe('dist/main.js');
      // npm start's node flags (issue #31: the old generation grows by 20 % over what survived its last full
      // collection instead of up to 4x; server/README.md "Running it: compiled JavaScript"), passed to node here too.
      const { nodeFlags, entry: startEntry, script } = npmStartCommand();
      expect(script).toBe('node --heap-growing-percent=20 dist/main.js');
      expect(startEntry).toBe(main.main);
      const outDir = path.join(SERVER, 'dist');
      const entry = path.join(SERVER, main.main);
      expect(fs.existsSync(entry)).toBe(true);
      // the build's stamp (scripts/build-server.mjs writes it after tsc succeeded; --if-stale compares the sources
      // with it)
      expect(fs.existsSync(path.join(outDir, '.build.json'))).toBe(true);
      // nothing of the tests or of the buyer SDK's sources is compiled in: the SDK's mcp export comes from its dist/
      expect(fs.readdirSync(outDir)).not.toContain('sdk-buyer');
      expect(fs.readdirSync(outDir)).not.toContain('test');
      expect(fs.readFileSync(path.join(outDir, 'http/mcp/mount.js'), 'utf8')).toContain(
        'require("@paid-api-marketplace/sdk-buyer/mcp")',
      );

      const database = await createTestDatabase();
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'compiled-main-'));
      const port = await freePort();
      const child = spawn(process.execPath, [...nodeFlags, entry], {
        cwd: SERVER,
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          PORT: String(port),
          DATA_DIR: dataDir,
          LOCAL_NETWORK_PORT: '0',
          LOCAL_NETWORK_LEDGER_CLOSE_MS: '1000',
          OPERATOR_API_KEY: 'op_key_for_the_compiled_test_000',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let logs = '';
      child.stdout.on('data', (d) => (logs += d));
      child.stderr.on('data', (d) => (logs += d));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      try {
        const base = `http://127.0.0.1:${port}`;
        let health: Response | null = null;
        for (let i = 0; i < 240 && !health && child.exitCode === null; i++) {
          await new Promise((r) => setTimeout(r, 500));
          health = await fetch(`${base}/health`).catch(() => null);
        }
        if (!health) throw new Error(`the compiled server never answered /health; logs:\n${logs.slice(-3000)}`);
        expect(health.status).toBe(200);
        expect(((await health.json()) as { status: string }).status).toBe('ok');
        expect((await fetch(`${base}/docs`)).status).toBe(200);
        expect((await fetch(`${base}/dashboard/`)).status).toBe(200);
        const mcp = await fetch(`${base}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              protocolVersion: '2025-03-26',
              capabilities: {},
              clientInfo: { name: 'compiled-test', version: '1' },
            },
          }),
        });
        expect(mcp.status).toBe(200);
        expect(await mcp.text()).toContain('"serverInfo"');
        child.kill('SIGTERM');
        expect(await exited).toBe(0);
        expect(logs).toContain('"msg":"stopped"');
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        await database.drop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
    420_000,
  );
});
