import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { createSafeFetcher } from '../../src/net';
import { toStroops } from '../../src/domain/amount';
import { NetworkRegistry } from '../../src/domain/network-registry';
import { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER } from '../../src/config';
import { startTestService, testNetworks, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { waitFor, waitIndexed } from '../discovery/helpers';

/** A seller's paid endpoint: answers an unpaid request with 402 and x402 requirements, by Host header. */
interface Endpoint {
  payTo: string;
  amount: string;
  mode: 'correct' | 'wrong_payto' | 'free';
}
const endpoints = new Map<string, Endpoint>();
/** Requests being answered right now, and the most seen at once. */
let inFlight = 0;
let maxInFlight = 0;
let slowMs = 0;
let paywall: http.Server;
let port = 0;
let network: LocalNetwork;
let svc: TestService;
let usdc: { code: string; issuer: string; contractId: string };

beforeAll(async () => {
  paywall = http.createServer(async (req, res) => {
    const host = (req.headers.host ?? '').split(':')[0];
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    res.on('close', () => {
      inFlight -= 1;
    });
    if (slowMs) await new Promise((r) => setTimeout(r, slowMs));
    const e = endpoints.get(host);
    if (!e) return void res.writeHead(404).end();
    if (e.mode === 'free')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"temperatureC":21}');
    const body = {
      x402Version: 2,
      error: 'PAYMENT_REQUIRED',
      accepts: [
        {
          scheme: 'exact',
          network: 'stellar:testnet',
          amount: toStroops(e.amount).toString(),
          asset: usdc.contractId,
          payTo: e.mode === 'wrong_payto' ? 'GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H' : e.payTo,
          maxTimeoutSeconds: 300,
          extra: { asset: { code: usdc.code, issuer: usdc.issuer } },
        },
      ],
    };
    res
      .writeHead(402, {
        'content-type': 'application/json',
        'payment-required': Buffer.from(JSON.stringify(body)).toString('base64'),
      })
      .end(JSON.stringify(body));
  });
  await new Promise<void>((r) => paywall.listen(0, '127.0.0.1', () => r()));
  port = (paywall.address() as AddressInfo).port;

  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
  usdc = network.assets.find((a) => a.code === 'USDC')!;
  svc = await startTestService({
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    facilitator: { channelAccounts: 2, pollMs: 25, confirmGraceMs: 10_000 },
    runJobs: true,
    jobPollMs: 200,
    operations: {
      ledgerCloseMs: 100,
      perHostIntervalMs: 10,
      // The SSRF-safe fetcher, allowed to reach the test's loopback endpoint: every seller domain resolves to it.
      probeFetch: createSafeFetcher({
        allowInsecureForTests: true,
        allowPrivateAddressesForTests: true,
        readBodyOfStatuses: [402],
        lookup: async () => [{ address: '127.0.0.1', family: 4 }],
      }),
    },
  });
});
afterAll(async () => {
  await svc.stop();
  await network.stop();
  await new Promise((r) => paywall.close(r));
});

async function sellerWithEndpoint(name: string): Promise<{ seller: SignedUpSeller; resourceId: string }> {
  const seller = await signUpSeller(svc.app);
  endpoints.set(seller.domain, { payTo: seller.wallet.publicKey(), amount: '0.05', mode: 'correct' });
  const res = await request(svc.app)
    .post('/v1/resources')
    .set(bearer(seller.apiKey))
    .send(
      resourceInput(seller, {
        name,
        description: 'Hourly rainfall forecast for any city, paid per call',
        url: `http://${seller.domain}:${port}/v1/forecast/{city}`,
        assetIssuer: usdc.issuer,
        amount: '0.05',
      }),
    );
  if (res.status !== 201) throw new Error(`create failed ${res.status} ${JSON.stringify(res.body)}`);
  return { seller, resourceId: (res.body.resource ?? res.body).id };
}

async function runNow(): Promise<Record<string, any>> {
  const queued = await request(svc.app)
    .post('/v1/conformance/runs')
    .set(bearer(OPERATOR_KEY))
    .send({ network: 'stellar:testnet' });
  expect(queued.status).toBe(202);
  expect(queued.body.items).toEqual([
    expect.objectContaining({
      network: 'stellar:testnet',
      status: 'queued',
      trigger: 'manual',
      evidence: 'local_simulation',
    }),
  ]);
  const id = queued.body.items[0].id as string;
  let run: Record<string, any> = {};
  await waitFor(async () => {
    run = (await request(svc.app).get(`/v1/conformance/runs/${id}`).set(bearer(OPERATOR_KEY))).body;
    return run.status === 'passed' || run.status === 'failed';
  }, 60_000);
  return run;
}

const searchIds = async () =>
  (await request(svc.app).get('/v1/discovery/search').query({ q: 'rainfall forecast' })).body.resources.map(
    (r: { id: string }) => r.id,
  ) as string[];

describe('conformance runner', () => {
  it('only the operator may start or read conformance runs', async () => {
    expect((await request(svc.app).get('/v1/conformance/runs')).status).toBe(401);
    const seller = await signUpSeller(svc.app);
    expect((await request(svc.app).post('/v1/conformance/runs').set(bearer(seller.apiKey)).send({})).status).toBe(403);
    expect(
      (await request(svc.app).get('/v1/conformance/runs/cfr_01JD7B2C3D4E5F6G7H8J9K0M1N').set(bearer(OPERATOR_KEY)))
        .status,
    ).toBe(404);
  });

  it(
    'on the local network a run passes the full cycle (verify, settle, receipt, replay, expiry, wrong ' +
      'amount/asset/recipient) and the 402 probes, labelled local simulation',
    async () => {
      const a = await sellerWithEndpoint('Rainfall forecast');
      const run = await runNow();
      const byName = Object.fromEntries(
        run.checks
          .filter((c: { name: string }) => c.name !== 'probe_402')
          .map((c: { name: string; outcome: string; reason: string | null }) => [
            c.name,
            `${c.outcome}${c.reason ? `: ${c.reason}` : ''}`,
          ]),
      );
      expect(byName).toEqual({
        supported: 'passed',
        fund_accounts: 'passed',
        verify: 'passed',
        settle: 'passed',
        receipt_readable: 'passed',
        replay_refused: 'passed',
        expired_refused: 'passed',
        wrong_amount_refused: 'passed',
        wrong_asset_refused: 'passed',
        wrong_recipient_refused: 'passed',
      });
      expect(run.checks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'probe_402', resourceId: a.resourceId, outcome: 'passed', reason: null }),
        ]),
      );
      expect(run).toMatchObject({
        status: 'passed',
        evidence: 'local_simulation',
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
      });

      // The settlement is real on the local network and carries the local simulation label.
      const settled = (await svc.db.query(`SELECT evidence, status FROM settlements ORDER BY created_at DESC LIMIT 1`, {
        plain: true,
      })) as { evidence: string; status: string };
      expect(settled).toEqual({ evidence: 'local_simulation', status: 'settled' });
      // The runner's own resource never reaches discovery.
      await waitIndexed(svc.db);
      const listed = (await request(svc.app).get('/v1/discovery/search').query({ q: 'conformance runner' })).body
        .resources;
      expect(listed).toEqual([]);

      const list = await request(svc.app).get('/v1/conformance/runs').set(bearer(OPERATOR_KEY)).query({ limit: 1 });
      expect(list.status).toBe(200);
      expect(list.body.items[0].id).toBe(run.id);
      const metrics = (await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY))).text;
      expect(metrics).toMatch(/conformance_last_run_passed\{[^}]*network="stellar:testnet"[^}]*\} 1/);
      const stats = await request(svc.app).get('/v1/stats');
      expect(stats.body.conformance.latest).toMatchObject({ network: 'stellar:testnet', evidence: 'local_simulation' });
    },
  );

  it(
    'a resource whose endpoint stops answering 402 with its cataloged terms fails the run, shows failing on its ' +
      'read, and sinks in search',
    async () => {
      const first = await sellerWithEndpoint('Rainfall forecast');
      const second = await sellerWithEndpoint('Rainfall forecast');
      await waitIndexed(svc.db);
      await runNow();
      await waitFor(async () => {
        const ids = await searchIds();
        return ids.includes(first.resourceId) && ids.includes(second.resourceId);
      });
      const before = await searchIds();
      // Equal in every signal: the newer resource (second) ranks above the older one.
      expect(before.indexOf(second.resourceId)).toBeLessThan(before.indexOf(first.resourceId));

      endpoints.get(second.seller.domain)!.mode = 'wrong_payto';
      const failed = await runNow();
      expect(failed.status).toBe('failed');
      expect(failed.checks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            name: 'probe_402',
            resourceId: second.resourceId,
            outcome: 'failed',
            reason: expect.stringMatching(/^RECIPIENT_MISMATCH/),
          }),
          expect.objectContaining({ name: 'probe_402', resourceId: first.resourceId, outcome: 'passed' }),
        ]),
      );
      endpoints.get(second.seller.domain)!.mode = 'free';
      const again = await runNow();
      expect(again.checks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            resourceId: second.resourceId,
            outcome: 'failed',
            reason: expect.stringMatching(/^NOT_402/),
          }),
        ]),
      );

      const read = await request(svc.app).get(`/v1/resources/${second.resourceId}`);
      expect(read.body.conformance).toMatchObject({
        state: 'failing',
        reason: expect.stringMatching(/^NOT_402/),
        uptime: expect.any(Number),
      });
      expect(read.body.conformance.uptime).toBeLessThan(1);
      expect((await request(svc.app).get(`/v1/resources/${first.resourceId}`)).body.conformance).toMatchObject({
        state: 'passing',
        uptime: 1,
      });

      await waitFor(async () => {
        const ids = await searchIds();
        return ids.indexOf(first.resourceId) < ids.indexOf(second.resourceId);
      });
      const metrics = (await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY))).text;
      expect(metrics).toMatch(/conformance_last_run_passed\{[^}]*network="stellar:testnet"[^}]*\} 0/);
      expect(metrics).toMatch(/conformance_runs_total\{[^}]*status="failed"[^}]*\} [1-9]/);
    },
  );

  it('probes of many hosts overlap, but at most 4 run at a time', async () => {
    for (let i = 0; i < 6; i++) await sellerWithEndpoint('Rainfall forecast');
    slowMs = 150; // slow answers, so probes overlap whenever the runner lets them
    maxInFlight = 0;
    try {
      const run = await runNow();
      expect(run.checks.filter((c: { name: string }) => c.name === 'probe_402').length).toBeGreaterThanOrEqual(6);
    } finally {
      slowMs = 0;
    }
    expect(maxInFlight).toBeGreaterThan(1);
    expect(maxInFlight).toBeLessThanOrEqual(4);
  });
});

// ---- The runner against other networks, each with its own local network and service (formerly their own files,
// conformance-verify-only.test.ts and conformance-default-pace.test.ts: one module load for the three). ----------

describe('conformance runner on a real network', () => {
  let network: LocalNetwork;
  let svc: TestService;

  beforeAll(async () => {
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
    // The service sees stellar:testnet as a real network (local: false): the runner must not fund or settle there.
    svc = await startTestService({
      networks: new NetworkRegistry([
        {
          network: 'stellar:testnet',
          passphrase: TESTNET_PASSPHRASE,
          rpcUrl: network.rpcUrl,
          settlementEnabled: true,
          local: false,
          assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
        },
        {
          network: 'stellar:pubnet',
          passphrase: PUBNET_PASSPHRASE,
          rpcUrl: null,
          settlementEnabled: false,
          assets: [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:pubnet'] }],
        },
      ]),
      facilitator: { channelAccounts: 1 },
    });
  });
  afterAll(async () => {
    await svc.stop();
    await network.stop();
  });

  it(
    'runs verify-only checks that move no money, labelled testnet verification; a network without an RPC is ' +
      'refused',
    async () => {
      const queued = await request(svc.app).post('/v1/conformance/runs').set(bearer(OPERATOR_KEY)).send({});
      expect(queued.status).toBe(202);
      expect(queued.body.items).toEqual([
        expect.objectContaining({ network: 'stellar:testnet', evidence: 'testnet_verification', status: 'queued' }),
      ]);
      const run = await svc.operations.runner.execute(queued.body.items[0].id);
      expect(run).toMatchObject({ status: 'passed', evidence: 'testnet_verification' });
      expect(run!.checks.map((c) => `${c.name}:${c.outcome}`)).toEqual([
        'supported:passed',
        'expired_refused:passed',
        'wrong_amount_refused:passed',
        'wrong_asset_refused:passed',
        'wrong_recipient_refused:passed',
      ]);
      const attempts = (await svc.db.query(
        `SELECT count(*)::int AS n FROM payment_attempts WHERE status = 'verified'`,
        {
          plain: true,
        },
      )) as { n: number };
      expect(attempts.n).toBe(0);
      const settlements = (await svc.db.query('SELECT count(*)::int AS n FROM settlements', { plain: true })) as {
        n: number;
      };
      expect(settlements.n).toBe(0);

      const pubnet = await request(svc.app)
        .post('/v1/conformance/runs')
        .set(bearer(OPERATOR_KEY))
        .send({ network: 'stellar:pubnet' });
      expect(pubnet.status).toBe(400);
      expect(pubnet.body).toMatchObject({ ok: false, error: { code: 'UNSUPPORTED_NETWORK' } });
    },
  );
});

describe('conformance runner at the default ledger pace', () => {
  let network: LocalNetwork;
  let svc: TestService;

  beforeAll(async () => {
    // Ledgers close every second (the cycle's settle waits for one), but the facilitator judges expiry at its default
    // 5 s per ledger, as `npm start` does: maxTimeoutSeconds 300 allows at most 60 + 2 ledgers past the latest.
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 1000 });
    svc = await startTestService({
      networks: testNetworks({
        rpcUrl: network.rpcUrl,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      facilitator: { channelAccounts: 1, pollMs: 50 },
    });
  });
  afterAll(async () => {
    await svc.stop();
    await network.stop();
  });

  it(
    'when verify judges expiry at 5 s per ledger (npm start), the local cycle signs within that window: verify, ' +
      'settle and the receipt pass',
    async () => {
      const queued = await request(svc.app)
        .post('/v1/conformance/runs')
        .set(bearer(OPERATOR_KEY))
        .send({ network: 'stellar:testnet' });
      expect(queued.status).toBe(202);
      const run = await svc.operations.runner.execute(queued.body.items[0].id);
      const latestAfter = network.latestLedger();
      const outcomes = Object.fromEntries(
        run!.checks.map((c) => [c.name, `${c.outcome}${c.reason ? `: ${c.reason}` : ''}`]),
      );
      expect(outcomes).toMatchObject({
        fund_accounts: 'passed',
        verify: 'passed',
        settle: 'passed',
        receipt_readable: 'passed',
        replay_refused: 'passed',
      });
      expect(run).toMatchObject({ status: 'passed', evidence: 'local_simulation' });
      // The authorization the runner signed stays valid 60 ledgers (300 s at 5 s), not the 100 that verify refused.
      // It was signed at a ledger no later than the latest after the run (ledgers close every second, and on a busy
      // machine several close during the run: measured from the latest before it, 61 failed at load 11), so its
      // expiry lies at most 60 past that one; 100 past would exceed it unless 40 ledgers (40 s) closed after the
      // signing.
      const attempt = (await svc.db.query(
        `SELECT expires_at_ledger AS e FROM payment_attempts WHERE status = 'settled'`,
        { plain: true },
      )) as { e: number };
      expect(attempt.e - latestAfter).toBeLessThanOrEqual(60);
    },
  );
});
