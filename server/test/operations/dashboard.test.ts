import fs from 'node:fs';
import path from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { chromium, type Browser } from 'playwright-core';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer } from '../support/fixtures';
import { fundedBuyer, paymentCase, sellerWithResource, type FacilitatorEnv } from '../facilitator/helpers';
import { waitFor } from '../discovery/helpers';

const ARTIFACTS = path.resolve(__dirname, '../../../.data/artifacts');

let network: LocalNetwork;
let svc: TestService;
let server: Server;
let base = '';
let browser: Browser;
let launched: Promise<Browser> | undefined;

beforeAll(async () => {
  // Chromium starts while the service does (its own process; awaited at the end).
  launched = chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
  svc = await startTestService({
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    facilitator: { channelAccounts: 2, pollMs: 25, confirmGraceMs: 10_000 },
    runJobs: true,
    jobPollMs: 200,
    operations: { ledgerCloseMs: 1000, sampleIntervalMs: 60_000 },
  });
  server = svc.app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launched;
  fs.mkdirSync(ARTIFACTS, { recursive: true });
}, 60_000);
afterAll(async () => {
  await (await launched?.catch(() => undefined))?.close();
  await new Promise((r) => server.close(r));
  await svc.stop();
  await network.stop();
});

/** Real traffic: a paid call (verify + settle), reads, an unknown id, searches; one dashboard sample after each round.
 * */
async function traffic(): Promise<void> {
  const env: FacilitatorEnv = {
    network,
    svc,
    usdc: network.assets.find((a) => a.code === 'USDC')!,
    stop: async () => undefined,
  };
  const buyer = await fundedBuyer(env, '5');
  const { seller, resource } = await sellerWithResource(env, '0.25');
  for (let round = 0; round < 3; round++) {
    const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25');
    const v = await request(server)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
    await request(server)
      .post('/v1/settle')
      .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
    await request(server).get(`/v1/resources/${resource.id}`);
    await request(server).get('/v1/resources/res_01JD6Y2B7C4D5E6F7G8H9J0K1M');
    await request(server).get('/v1/discovery/search').query({ q: 'forecast' });
    await request(server).get('/v1/stats');
    await svc.operations.sample();
  }
  const run = await request(server).post('/v1/conformance/runs').set(bearer(OPERATOR_KEY)).send({});
  await waitFor(
    async () =>
      ['passed', 'failed'].includes(
        (await request(server).get(`/v1/conformance/runs/${run.body.items[0].id}`).set(bearer(OPERATOR_KEY))).body
          .status,
      ),
    60_000,
  );
  await svc.operations.monitor.probeAll();
  await svc.operations.sample();
}

describe('operator dashboard (/dashboard) in headless Chromium', () => {
  it(
    'the page and its uPlot bundle are served from local files, ' + 'and the data endpoint needs the operator key',
    async () => {
      const page = await request(server).get('/dashboard');
      expect(page.status).toBe(200);
      expect(page.text).toContain('/dashboard/vendor/uPlot.iife.min.js');
      expect(page.text).not.toMatch(/https?:\/\//);
      expect(page.headers['content-security-policy']).toContain("default-src 'self'");
      expect((await request(server).get('/dashboard/vendor/uPlot.iife.min.js')).status).toBe(200);
      expect((await request(server).get('/v1/operations/dashboard')).status).toBe(401);
    },
  );

  it(
    'with real traffic, every panel shows real numbers, charts are drawn, and the key lives only in ' +
      'sessionStorage',
    async () => {
      await traffic();
      const context = await browser.newContext({ viewport: { width: 1400, height: 1800 } });
      const page = await context.newPage();
      const external: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith(base)) external.push(r.url());
      });
      await page.goto(`${base}/dashboard`);
      await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-login.png') });
      await page.fill('#key', OPERATOR_KEY);
      await page.click('#login button[type=submit]');
      await page.waitForSelector('#panels:not([hidden])');
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      await page
        .waitForFunction(() => document.querySelectorAll('.chart canvas').length >= 6)
        .catch(async (e) => {
          await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-failed.png'), fullPage: true });
          throw new Error(
            `${(e as Error).message}; page errors: ${pageErrors.join(' | ')}; canvases: ` +
              `${await page.evaluate(() => document.querySelectorAll('.chart canvas').length)}`,
          );
        });
      await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard.png'), fullPage: true });

      const text = async (panel: string, f: string) =>
        (await page.textContent(`[data-panel="${panel}"] [data-field="${f}"]`))?.trim() ?? '';
      expect(await text('api', 'status')).toBe('ok');
      for (const f of ['requestRate', 'p50', 'p95'])
        expect([f, await text('api', f)]).toEqual([f, expect.stringMatching(/^[0-9]+(\.[0-9]+)?( ms)?$/)]);
      expect(Number.parseFloat(await text('api', 'p50'))).toBeGreaterThan(0);
      expect(await text('api', 'errorRate')).toMatch(/^[0-9.]+ %$/);
      expect(Number.parseFloat(await text('settlement', 'settleP50'))).toBeGreaterThan(0);
      expect(Number(await text('settlement', 'settled'))).toBeGreaterThanOrEqual(3);
      expect(Number(await text('search', 'indexed'))).toBeGreaterThanOrEqual(0);
      expect(await text('search', 'lag')).toMatch(/^[0-9]+ (s|min|h)$/);

      const workerRows = await page.$$eval('tbody[data-field="workers"] tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
      );
      expect(workerRows.map((r) => r[0]).sort()).toEqual([
        'conformance-runner-worker',
        'network-health-worker',
        'receipt-finalizer-worker',
        'resource-indexing-worker',
        'retention-worker',
        'search-sync-worker',
        'settlement-confirmation-worker',
        'stale-payment-cleanup-worker',
      ]);
      for (const r of workerRows) for (const v of r.slice(1, 7)) expect(v).toMatch(/^[0-9]+$/);
      const networkRows = await page.$$eval('tbody[data-field="networks"] tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
      );
      expect(networkRows[0]).toEqual([
        'stellar:testnet',
        'ok',
        '',
        expect.stringMatching(/ ms$/),
        expect.stringMatching(/^[0-9]+$/),
        expect.stringMatching(/ s$/),
        'not configured',
        'enabled',
        'local_simulation',
      ]);
      expect(networkRows[1]).toEqual(expect.arrayContaining(['stellar:pubnet', 'disabled', 'mainnet_verification']));
      const conformance = await page.$$eval('tbody[data-field="conformance"] tr', (trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)),
      );
      expect(conformance[0]).toEqual([
        'stellar:testnet',
        expect.stringMatching(/^(passed|failed)$/),
        'local_simulation',
        expect.any(String),
      ]);

      const storage = await page.evaluate(() => ({
        session: sessionStorage.getItem('marketplace.operatorKey'),
        local: localStorage.length,
        cookie: document.cookie,
      }));
      expect(storage).toEqual({ session: OPERATOR_KEY, local: 0, cookie: '' });
      expect(external).toEqual([]);
      await context.close();
    },
    180_000,
  );

  it("/v1/stats counts the paid calls, not the conformance runner's own test settlements", async () => {
    const settledBefore = Date.now();
    const [rows] = await svc.db.query(`SELECT (s.domain = 'conformance-runner.invalid') AS runner, count(*)::int AS n
      FROM settlements st JOIN payment_attempts a ON a.id = st.payment_attempt_id JOIN sellers s ON s.id = a.seller_id
      WHERE st.status = 'settled' AND st.network = 'stellar:testnet' GROUP BY 1 ORDER BY 1`);
    // the traffic above: three paid calls, and the runner settled at least one payment of its own
    expect(rows).toEqual([
      { runner: false, n: 3 },
      { runner: true, n: expect.any(Number) },
    ]);
    // An answer computed after the settlements above were read (/v1/stats is cached 5 s: the traffic read it too).
    let stats = await request(server).get('/v1/stats');
    while (Date.parse(stats.body.generatedAt) < settledBefore) {
      await new Promise((r) => setTimeout(r, 100));
      stats = await request(server).get('/v1/stats');
    }
    expect(stats.body.networks[0]).toMatchObject({ network: 'stellar:testnet', successfulSettlements: 3 });
    expect(stats.body.networks[0].latestTransactionHashes).toHaveLength(3);
  });

  it('the login says where the operator key is (OPERATOR_API_KEY, or the data folder file)', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    const hint = (await page.textContent('#login [data-field="key-location"]')) ?? '';
    expect(hint).toContain('OPERATOR_API_KEY');
    expect(hint).toContain('.data/operator-api-key');
    await page.screenshot({ path: path.join(ARTIFACTS, 'dashboard-login-1280.png') });
    await context.close();
  });

  for (const width of [1280, 1920]) {
    it(
      `at ${width} px every table fits inside its card, the indexing worker shows its runs after indexing, and ` +
        `pubnet (settlement off) is not labelled as settling`,
      async () => {
        await waitFor(async () =>
          (await request(server).get('/v1/operations/dashboard').set(bearer(OPERATOR_KEY))).body.workers.some(
            (w: { worker: string; completed: number }) => w.worker === 'resource-indexing-worker' && w.completed > 0,
          ),
        );
        const context = await browser.newContext({ viewport: { width, height: 1400 } });
        const page = await context.newPage();
        await page.goto(`${base}/dashboard`);
        await page.fill('#key', OPERATOR_KEY);
        await page.click('#login button[type=submit]');
        await page.waitForFunction(
          () =>
            document.querySelectorAll('tbody[data-field="networks"] tr').length >= 2 &&
            document.querySelectorAll('.chart canvas').length >= 6,
        );
        await page.screenshot({ path: path.join(ARTIFACTS, `dashboard-${width}.png`), fullPage: true });
        const overflow = await page.$$eval('.panel', (panels) =>
          panels.flatMap((p) =>
            [...p.querySelectorAll('table')]
              .map((t) => ({
                panel: p.getAttribute('data-panel'),
                table: Math.ceil(t.getBoundingClientRect().right),
                card: Math.floor(p.getBoundingClientRect().right),
              }))
              .filter((x) => x.table > x.card),
          ),
        );
        expect(overflow).toEqual([]);
        const indexing = await page.$$eval('tbody[data-field="workers"] tr', (trs) =>
          trs
            .map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))
            .find((r) => r[0] === 'resource-indexing-worker'),
        );
        expect(Number(indexing![3])).toBeGreaterThan(0);
        expect(indexing![7]).not.toBe('never');
        const pubnet = await page.$$eval('tbody[data-field="networks"] tr', (trs) =>
          trs
            .map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))
            .find((r) => r[0] === 'stellar:pubnet'),
        );
        expect(pubnet).not.toContain('mainnet_settlement');
        expect(pubnet).toContain('mainnet_verification');
        await context.close();
      },
      120_000,
    );
  }

  it('a wrong key is refused and the page asks again', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/dashboard`);
    await page.fill('#key', 'mk_op_not_the_operator_key_000000000');
    await page.click('#login button[type=submit]');
    await page.waitForFunction(() => (document.querySelector('#login-error')?.textContent ?? '').includes('refused'));
    expect(await page.evaluate(() => sessionStorage.getItem('marketplace.operatorKey'))).toBeNull();
    await context.close();
  });
});
