/**
 * verify's ledger cost (issue #18): a verify is one simulateTransaction (enforce mode) and nothing else on the
 * ledger; verifies arriving together are each judged on their OWN payer (the funded ones verify, the poor and the
 * trustline-less ones are refused by their simulation). Real local network, real PostgreSQL, real HTTP; the calls
 * are read from the service's own metric.
 */
import request from 'supertest';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  startFacilitatorEnv,
  type FacilitatorEnv,
} from '../facilitator/helpers';
import { bearer } from '../support/fixtures';
import { OPERATOR_KEY } from '../support/test-service';

async function rpcCalls(env: FacilitatorEnv, method: string): Promise<number> {
  const res = await request(env.svc.app).get('/metrics').set(bearer(OPERATOR_KEY));
  let total = 0;
  for (const m of res.text.matchAll(
    new RegExp(`^ledger_rpc_requests_total\\{[^}]*method="${method}"[^}]*\\} (\\d+)`, 'gm'),
  ))
    total += Number(m[1]);
  return total;
}

describe('verifies arriving together', () => {
  let env: FacilitatorEnv;
  let payTo: string;
  beforeAll(async () => {
    env = await startFacilitatorEnv();
    const { seller } = await sellerWithResource(env, '0.5');
    payTo = seller.wallet.publicKey();
  });
  afterAll(() => env.stop());

  it(
    'each costs one simulateTransaction and no ledger-entry read, and each is judged on its own payer: the ' +
      'funded ones verify, the poor and the trustline-less ones are refused',
    async () => {
      const rich = await Promise.all(Array.from({ length: 12 }, () => fundedBuyer(env, '5')));
      const poor = await Promise.all(Array.from({ length: 4 }, () => fundedBuyer(env, '0.1')));
      const noTrustline = await Promise.all(Array.from({ length: 4 }, () => fundedBuyer(env, '0')));
      const buyers = [...rich, ...poor, ...noTrustline];
      const cases = await Promise.all(buyers.map((b) => paymentCase(env, b, payTo, '0.5')));
      await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: cases[0].payload, paymentRequirements: cases[0].requirements });
      const before = {
        simulations: await rpcCalls(env, 'simulateTransaction'),
        entries: await rpcCalls(env, 'getLedgerEntries'),
      };

      const answers = await Promise.all(
        cases
          .slice(1)
          .map((c) =>
            request(env.svc.app)
              .post('/v1/verify')
              .send({ paymentPayload: c.payload, paymentRequirements: c.requirements }),
          ),
      );
      const outcome = answers.map((r) => (r.status === 200 ? 'verified' : `${r.status} ${r.body.error?.code}`));
      expect(outcome).toEqual([
        ...Array.from({ length: 11 }, () => 'verified'),
        ...Array.from({ length: 4 }, () => '422 INSUFFICIENT_BALANCE'),
        ...Array.from({ length: 4 }, () => '422 TRUSTLINE_REQUIRED'),
      ]);
      expect((await rpcCalls(env, 'simulateTransaction')) - before.simulations).toBe(answers.length);
      expect((await rpcCalls(env, 'getLedgerEntries')) - before.entries).toBe(0);
    },
  );
});
