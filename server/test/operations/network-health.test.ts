import request from 'supertest';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer } from '../support/fixtures';
import { fundedBuyer, paymentCase, sellerWithResource, type FacilitatorEnv } from '../facilitator/helpers';

const WORKERS = [
  'settlement-confirmation-worker',
  'resource-indexing-worker',
  'search-sync-worker',
  'conformance-runner-worker',
  'network-health-worker',
  'receipt-finalizer-worker',
  'stale-payment-cleanup-worker',
];

let network: LocalNetwork;
let svc: TestService;
let env: FacilitatorEnv;

beforeAll(async () => {
  // Ledgers close only when the test closes them, so "the ledger advanced" is under the test's control.
  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 0 });
  svc = await startTestService({
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    facilitator: { channelAccounts: 1, pollMs: 25, confirmGraceMs: 10_000 },
    operations: { ledgerCloseMs: 100 },
  });
  env = { network, svc, usdc: network.assets.find((a) => a.code === 'USDC')!, stop: async () => undefined };
});
afterAll(async () => {
  await svc.stop();
  await network.stop().catch(() => undefined);
});

const metrics = async () => (await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY))).text;

/** The value of the series `name` whose labels include `labels` (label order in the exposition does not matter). */
function series(text: string, name: string, labels: Record<string, string>): number | null {
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => m[2].split(',').includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return null;
}

describe('network health and the operational surface', () => {
  it('every worker reports its eight figures at zero from the start, before any job ran or failed', async () => {
    const text = await metrics();
    for (const worker of WORKERS) {
      for (const name of [
        'job_queue_depth',
        'job_active',
        'job_completed_total',
        'job_failed_total',
        'job_retries_total',
        'job_dead_letter_total',
        'job_last_success_timestamp_seconds',
        'job_processing_duration_seconds_count',
      ]) {
        expect([name, worker, series(text, name, { worker, environment: 'test' })]).toEqual([name, worker, 0]);
      }
    }
    expect(series(text, 'facilitator_settlement_enabled', { network: 'stellar:pubnet' })).toBe(0);
    expect(series(text, 'conformance_runs_total', { network: 'stellar:testnet', status: 'failed' })).toBe(0);
    for (const network of ['stellar:testnet', 'stellar:pubnet']) {
      expect(series(text, 'facilitator_settle_total', { network, outcome: 'failure' })).toBe(0);
      expect(series(text, 'facilitator_verify_total', { network, outcome: 'success' })).toBe(0);
    }
    expect(series(text, 'ledger_rpc_errors_total', { network: 'stellar:testnet', method: 'getHealth' })).toBe(0);
  });

  it(
    'before the first probe /health is degraded for the network with NOT_PROBED_YET; after it, ok with the ' +
      'observed ledger',
    async () => {
      const before = await request(svc.app).get('/health');
      expect(before.body).toMatchObject({
        status: 'degraded',
        affectedNetworks: ['stellar:testnet'],
        checks: { ledger: { 'stellar:testnet': { status: 'degraded', reason: 'NOT_PROBED_YET' } } },
      });

      await network.closeLedger();
      await svc.operations.monitor.probeAll();
      const res = await request(svc.app).get('/health');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'ok',
        affectedNetworks: [],
        checks: { ledger: { 'stellar:testnet': { status: 'ok', latestLedger: network.latestLedger() } } },
      });
      const row = (await svc.db.query(`SELECT * FROM network_health WHERE network = 'stellar:testnet'`, {
        plain: true,
      })) as Record<string, unknown>;
      expect(row).toMatchObject({ rpc_up: true, rpc_healthy: true, latest_ledger: String(network.latestLedger()) });
      const text = await metrics();
      expect(series(text, 'ledger_latest_observed', { network: 'stellar:testnet' })).toBe(network.latestLedger());
      expect(series(text, 'ledger_rpc_up', { network: 'stellar:testnet' })).toBe(1);
      expect(
        series(text, 'ledger_rpc_latency_seconds_count', { network: 'stellar:testnet', method: 'getHealth' }),
      ).toBeGreaterThan(0);
    },
  );

  it('GET /v1/networks shows only the scheme and host of an RPC URL, never its path or query', async () => {
    const res = await request(svc.app).get('/v1/networks');
    const testnet = res.body.items.find((n: { network: string }) => n.network === 'stellar:testnet');
    expect(testnet.rpcUrl).toBe(new URL(network.rpcUrl).origin);
    expect(testnet.rpcUrl).not.toContain('/rpc');
  });

  it(
    'when the ledger stops advancing for three close intervals, /health is degraded with LEDGER_STALE and names ' +
      'the network',
    async () => {
      await network.closeLedger();
      await svc.operations.monitor.probeAll();
      await new Promise((r) => setTimeout(r, 400)); // > 3 x 100 ms without a ledger close
      await svc.operations.monitor.probeAll();
      const res = await request(svc.app).get('/health');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'degraded',
        affectedNetworks: ['stellar:testnet'],
        checks: {
          ledger: {
            'stellar:testnet': {
              status: 'degraded',
              reason: 'LEDGER_STALE',
              message: 'The latest ledger has not advanced for three ledger close intervals.',
            },
          },
        },
      });
      expect(series(await metrics(), 'ledger_stale', { network: 'stellar:testnet' })).toBe(1);
      await network.closeLedger();
      await svc.operations.monitor.probeAll();
      expect((await request(svc.app).get('/health')).body.status).toBe('ok');
    },
  );

  it(
    'when the RPC is down: /health says RPC_UNREACHABLE with a fixed message, settle fails fast with 503 ' +
      'SERVICE_UNAVAILABLE, verify still refuses a wrong amount',
    async () => {
      const buyer = await fundedBuyer(env, '5');
      const { seller, resource } = await sellerWithResource(env, '0.25');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25');
      const verified = await request(svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
      expect(verified.status).toBe(200);
      const wrong = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25', {
        requirements: { amount: '0.5' },
      });

      await network.stop();
      await svc.operations.monitor.probeAll();

      const health = await request(svc.app).get('/health');
      expect(health.status).toBe(200);
      expect(health.body).toMatchObject({
        status: 'degraded',
        affectedNetworks: ['stellar:testnet'],
        checks: {
          ledger: {
            'stellar:testnet': {
              status: 'down',
              reason: 'RPC_UNREACHABLE',
              message: "The network's Soroban RPC does not answer.",
            },
          },
        },
      });
      expect(JSON.stringify(health.body)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|http:/);
      expect(series(await metrics(), 'ledger_rpc_up', { network: 'stellar:testnet' })).toBe(0);

      const settled = await request(svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
      expect(settled.status).toBe(503);
      expect(settled.body).toMatchObject({ ok: false, error: { code: 'SERVICE_UNAVAILABLE' } });
      // The attempt was not claimed: it can still be settled when the network is back.
      const row = (await svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id: verified.body.paymentAttemptId },
        plain: true,
      })) as { status: string };
      expect(row.status).toBe('verified');

      const refused = await request(svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: wrong.payload, paymentRequirements: wrong.requirements });
      expect(refused.body).toMatchObject({ ok: false, error: { code: 'AMOUNT_MISMATCH' } });
    },
  );
});
