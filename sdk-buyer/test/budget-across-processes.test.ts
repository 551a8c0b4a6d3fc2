/**
 * Budgets across processes (issue #29, item 9: "two buyer processes sharing one FileBudgetStore sign 0.15 against a
 * total of 0.1"). Two REAL buyer processes (node + tsx, test/support/budget-process.ts) share one budget file and pay
 * a fake seller that keeps every signed authorization without settling it (so each signature stays committed), in
 * front of the real marketplace and the local network. And a holder of the store's lock that is SIGKILLed does not
 * block the store for longer than its stale time.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { Budget, FileBudgetStore } from '../src';
import { toStroops } from '../src/core/amounts';
import { paymentRequiredFor, requirementsSource } from '../../sdk-seller/src/paywall/paywall';
import {
  listen,
  sellerWithPaidEndpoint,
  startMarketplace,
  type Marketplace,
  type PaidEndpoint,
} from '../../test/support/marketplace';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const unb64 = (v: string) => JSON.parse(Buffer.from(v, 'base64').toString('utf8')) as Record<string, unknown>;
const CHILD = path.join(__dirname, 'support/budget-process.ts');

function start(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  lines: string[];
  line(match: RegExp, timeoutMs?: number): Promise<string>;
} {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], {
    cwd: path.resolve(__dirname, '../..'),
    stdio: 'pipe',
  });
  const lines: string[] = [];
  let stderr = '';
  let buffer = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    buffer += d.toString('utf8');
    let i;
    while ((i = buffer.indexOf('\n')) >= 0) {
      lines.push(buffer.slice(0, i));
      buffer = buffer.slice(i + 1);
    }
    waiters.splice(0).forEach((w) => w());
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  return {
    child,
    lines,
    line: (match, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no line ${match} within ${timeoutMs} ms; stderr: ${stderr}`)),
          timeoutMs,
        );
        const check = () => {
          const found = lines.find((l) => match.test(l));
          if (found) {
            clearTimeout(timer);
            return resolve(found);
          }
          if (child.exitCode !== null) {
            clearTimeout(timer);
            return reject(new Error(`exited ${child.exitCode}; stderr: ${stderr}`));
          }
          waiters.push(check);
        };
        child.once('exit', () => waiters.splice(0).forEach((w) => w()));
        check();
      }),
  };
}

describe('a FileBudgetStore shared by several buyer processes', () => {
  let m: Marketplace;
  let endpoint: PaidEndpoint;
  let fake: { url: string; collected: Array<Record<string, unknown>>; close(): Promise<void> };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'shared-budget-'));
  const children: ChildProcessWithoutNullStreams[] = [];

  beforeAll(async () => {
    m = await startMarketplace();
    endpoint = await sellerWithPaidEndpoint(m, {
      name: 'Collecting Weather',
      domain: 'collecting-weather.test',
      price: '0.05',
    });
    const terms = requirementsSource({ client: endpoint.seller, resourceId: endpoint.resourceId });
    const app = express();
    fake = { url: '', collected: [], close: async () => undefined };
    app.get('/paid', async (req, res) => {
      const pr = paymentRequiredFor(
        await terms(),
        endpoint.resourceId,
        { url: fake.url, description: '', mimeType: 'application/json' },
        'PAYMENT_REQUIRED',
      );
      const sig = req.headers['payment-signature'];
      if (typeof sig !== 'string') return res.status(402).set('PAYMENT-REQUIRED', b64(pr)).json(pr);
      // Kept, never settled: the authorization stays usable until it expires, so the buyer must keep counting it.
      fake.collected.push(unb64(sig));
      res.status(500).json({ error: 'try again later' });
    });
    const h = await listen(app);
    fake.url = `http://127.0.0.1:${h.port}/paid`;
    fake.close = h.close;
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await fake?.close();
    await endpoint?.stop();
    await m?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('when two buyer processes share one FileBudgetStore, together they never sign more than its total', async () => {
    const file = path.join(tmp, 'two-processes.json');
    const payer = Keypair.random();
    // Two processes, three simultaneous calls of 0.05 each, one total of 0.1: without a lock each process counts
    // only its own signatures and together they sign 0.2.
    const a = start(['pay', m.baseUrl, fake.url, payer.secret(), file, '3']);
    const b = start(['pay', m.baseUrl, fake.url, payer.secret(), file, '3']);
    children.push(a.child, b.child);
    await Promise.all([a.line(/^ready$/), b.line(/^ready$/)]);
    a.child.stdin.write('go\n');
    b.child.stdin.write('go\n');
    const outcomes = [
      ...JSON.parse(await a.line(/^\[/, 90_000)),
      ...JSON.parse(await b.line(/^\[/, 90_000)),
    ] as string[];

    expect(outcomes.filter((o) => o.startsWith('signed')).length).toBe(2);
    expect(outcomes.filter((o) => o === 'BUDGET_EXCEEDED').length).toBe(4);
    // What the seller holds is what counts: two authorizations of 0.05 (500 000 stroops each), 0.1 in all.
    expect(fake.collected).toHaveLength(2);
    const signedStroops = fake.collected.reduce((s, p) => s + toStroops(String(p.amount)), 0n);
    expect(signedStroops).toBeLessThanOrEqual(1_000_000n);
    // And the shared file agrees: both signatures committed, none lost by one process overwriting the other.
    const stored = new FileBudgetStore(file).load();
    expect(stored.filter((c) => c.state === 'committed').map((c) => c.stroops)).toEqual(['500000', '500000']);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  }, 180_000);

  it(
    'when the process holding the store lock is killed, the others wait while it lives and take the lock over ' +
      'once it is stale',
    async () => {
      const file = path.join(tmp, 'killed-holder.json');
      const holder = start(['hold', file, '2000']);
      children.push(holder.child);
      await holder.line(/^locked$/);
      expect(fs.existsSync(`${file}.lock`)).toBe(true);

      const budget = new Budget({ total: '0.1', store: new FileBudgetStore(file, { staleMs: 2000 }) });
      const key = {
        network: 'stellar:testnet',
        asset: m.network.assets.find((a) => a.code === 'USDC')!.contractId,
        payTo: endpoint.wallet.publicKey(),
        payer: Keypair.random().publicKey(),
      };
      let reservedAt = 0;
      const started = Date.now();
      const reserving = budget.reserve(key, 500_000n).then((c) => ((reservedAt = Date.now()), c));
      // A live holder refreshes its lock: 3 s (longer than its 2 s stale time) later the reservation still waits.
      await new Promise((r) => setTimeout(r, 3000));
      expect(reservedAt).toBe(0);
      holder.child.kill('SIGKILL');
      const killedAt = Date.now();
      const reserved = await reserving;
      expect(reserved.state).toBe('reserved');
      // Taken over within the stale time (2 s) plus the retry pace, not blocked forever.
      expect(reservedAt - killedAt).toBeLessThan(6000);
      expect(reservedAt - started).toBeGreaterThanOrEqual(3000);
      expect(new FileBudgetStore(file).load()).toHaveLength(1);
    },
    60_000,
  );
});
