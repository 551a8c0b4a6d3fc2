/**
 * verify's shortcuts keep its answers: the expiry window is judged against the simulation's latest ledger (issue #18:
 * no separate ledger read) and never lets an expired authorization through; the replay claim and the attempt are one
 * statement, and a verify of a cataloged resource that its simulation refuses leaves one verification_failed attempt
 * that does not block the authorization. The latest-ledger cache (still used outside verify) asks the network once per
 * refresh. Real local network (100 ms ledgers), real PostgreSQL, real HTTP.
 */
import request from 'supertest';
import { QueryTypes } from 'sequelize';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  startFacilitatorEnv,
  type FacilitatorEnv,
  type PaymentCase,
} from '../facilitator/helpers';

describe('verify judges the expiry with the latest ledger its simulation ran on', () => {
  let env: FacilitatorEnv;
  let payTo: string;
  let resourceId: string;
  beforeAll(async () => {
    env = await startFacilitatorEnv();
    const { seller, resource } = await sellerWithResource(env, '0.5');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
  });
  afterAll(() => env.stop());

  const verify = (c: PaymentCase) =>
    request(env.svc.app).post('/v1/verify').send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
  const verifyResource = (c: PaymentCase) =>
    request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId });
  const attempts = async (payer: string) =>
    (await env.svc.db.query(
      'SELECT status, failure_code FROM payment_attempts WHERE payer = :payer ORDER BY created_at',
      { replacements: { payer }, type: QueryTypes.SELECT },
    )) as Array<{
      status: string;
      failure_code: string | null;
    }>;

  it(
    'an authorization expiring at the latest ledger is refused AUTH_EXPIRED on every try, while verifies keep ' +
      'the cached ledger warm',
    async () => {
      const buyer = await fundedBuyer(env, '5');
      for (let i = 0; i < 6; i += 1) {
        expect((await verify(await paymentCase(env, buyer, payTo, '0.5'))).status).toBe(200);
        const expired = await verify(
          await paymentCase(env, buyer, payTo, '0.5', { sign: { expiration: env.network.latestLedger() } }),
        );
        expect(expired.status).toBe(422);
        expect(expired.body.error.code).toBe('AUTH_EXPIRED');
      }
    },
  );

  it(
    'a verify of a cataloged resource refused on the ledger state leaves one verification_failed attempt, and ' +
      'the same authorization verifies once the payer is funded, then only once',
    async () => {
      const buyer = await fundedBuyer(env, '0.1');
      const c = await paymentCase(env, buyer, payTo, '0.5');
      const poor = await verifyResource(c);
      expect(poor.status).toBe(422);
      expect(poor.body.error.code).toBe('INSUFFICIENT_BALANCE');
      expect(await attempts(buyer.publicKey())).toEqual([
        { status: 'verification_failed', failure_code: 'INSUFFICIENT_BALANCE' },
      ]);
      await env.network.faucet(buyer.publicKey(), 'USDC', '1');
      const ok = await verifyResource(c);
      expect(ok.status).toBe(200);
      const again = await verifyResource(c);
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({
        code: 'REPLAY_DETECTED',
        details: [{ field: 'paymentAttemptId', message: ok.body.paymentAttemptId }],
      });
      expect(await attempts(buyer.publicKey())).toEqual([
        { status: 'verification_failed', failure_code: 'INSUFFICIENT_BALANCE' },
        { status: 'verified', failure_code: null },
      ]);
    },
  );
});
