/**
 * Issue 32, the REST route: the root README's "REST in six requests" block (challenge, sign-up, create, search,
 * verify, settle) is run with bash exactly as written, against a real `npm start`, from a folder inside the clone
 * (where `npx` finds the SDKs' signer bins), and ends with a settled payment (local simulation).
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startMain, type StartedMain } from '../support/main-process';

const ROOT = path.resolve(__dirname, '../..');

function restBlock(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('### REST in six requests');
  const end = readme.indexOf('\n##', start + 1);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start, end));
  if (start < 0 || !block) throw new Error('README.md has no "REST in six requests" sh block');
  return block[1];
}

function bash(
  script: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const killer = setTimeout(() => child.kill('SIGKILL'), 240_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('REST in six requests (root README)', () => {
  let main: StartedMain;
  let dir: string;
  beforeAll(async () => {
    main = await startMain();
    fs.mkdirSync(path.join(ROOT, '.data'), { recursive: true });
    dir = fs.mkdtempSync(path.join(ROOT, '.data', 'rest-route-'));
  }, 240_000);
  afterAll(async () => {
    await main?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it(
    'the curl lines, run as written, sign up a seller, create and ' + 'find a resource, verify and settle a payment',
    async () => {
      const run = await bash(restBlock(), dir, {
        MARKETPLACE_URL: main.baseUrl,
        LOCAL_NETWORK_URL: main.localNetworkUrl,
      });
      if (run.code !== 0)
        throw new Error(
          `the REST block failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}\n${main.logs().slice(-3000)}`,
        );
      const read = (f: string) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
      expect(read('seller.json').seller).toMatchObject({
        domain: 'rest-weather.test',
        verificationStatus: 'unverified',
      });
      expect(read('resource.json')).toMatchObject({
        amount: '0.01',
        warnings: [{ code: 'CATALOG_VALIDATION_FAILED', field: 'url', message: expect.stringContaining('plain http') }],
      });
      expect(read('search.json').resources).toEqual(expect.any(Array));
      expect(read('verified.json')).toMatchObject({ ok: true, paymentAttemptId: expect.stringMatching(/^pay_/) });
      expect(read('settled.json')).toMatchObject({
        ok: true,
        status: 'settled',
        evidence: 'local_simulation',
        receiptId: expect.stringMatching(/^rcp_/),
      });
      expect(run.stdout).toMatch(/^settled [0-9a-f]{64} rcp_\S+ \(local_simulation\)$/m);
      // no secret reaches the output
      expect(run.stdout + run.stderr).not.toMatch(/\bS[A-Z2-7]{55}\b/);
    },
    300_000,
  );
});
