import request from 'supertest';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer } from '../support/fixtures';

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

describe('conformance runner at the default ledger pace', () => {
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
