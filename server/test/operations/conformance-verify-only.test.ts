import request from 'supertest';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { NetworkRegistry } from '../../src/domain/network-registry';
import { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER } from '../../src/config';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer } from '../support/fixtures';

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

describe('conformance runner on a real network', () => {
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
