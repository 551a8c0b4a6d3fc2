/**
 * verify's shortcuts keep its answers: the expiry window is judged against the simulation's latest ledger (issue #18:
 * no separate ledger read) and never lets an expired authorization through; the replay claim and the attempt are one
 * statement, and a verify of a cataloged resource that its simulation refuses leaves one verification_failed attempt
 * that does not block the authorization. The latest-ledger cache (still used outside verify) asks the network once per
 * refresh. Real local network (100 ms ledgers), real PostgreSQL, real HTTP.
 */
import request from 'supertest';
import { QueryTypes } from 'sequelize';
import { rpc } from '@stellar/stellar-sdk';
import { LatestLedgerCache } from '../../src/ledger/latest-ledger-cache';
import { fundedBuyer, paymentCase, sellerWithResource, sleep, startFacilitatorEnv, type FacilitatorEnv, type PaymentCase } from '../facilitator/helpers';

describe('verify with the latest ledger kept current', () => {
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

  const verify = (c: PaymentCase) => request(env.svc.app).post('/v1/verify').send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
  const verifyResource = (c: PaymentCase) => request(env.svc.app).post('/v1/verify').send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId });
  const attempts = async (payer: string) =>
    (await env.svc.db.query('SELECT status, failure_code FROM payment_attempts WHERE payer = :payer ORDER BY created_at', { replacements: { payer }, type: QueryTypes.SELECT })) as Array<{
      status: string;
      failure_code: string | null;
    }>;

  it('an authorization expiring at the latest ledger is refused AUTH_EXPIRED on every try, while verifies keep the cached ledger warm', async () => {
    const buyer = await fundedBuyer(env, '5');
    for (let i = 0; i < 6; i += 1) {
      expect((await verify(await paymentCase(env, buyer, payTo, '0.5'))).status).toBe(200);
      const expired = await verify(await paymentCase(env, buyer, payTo, '0.5', { sign: { expiration: env.network.latestLedger() } }));
      expect(expired.status).toBe(422);
      expect(expired.body.error.code).toBe('AUTH_EXPIRED');
    }
  });

  it('a verify of a cataloged resource refused on the ledger state leaves one verification_failed attempt, and the same authorization verifies once the payer is funded, then only once', async () => {
    const buyer = await fundedBuyer(env, '0.1');
    const c = await paymentCase(env, buyer, payTo, '0.5');
    const poor = await verifyResource(c);
    expect(poor.status).toBe(422);
    expect(poor.body.error.code).toBe('INSUFFICIENT_BALANCE');
    expect(await attempts(buyer.publicKey())).toEqual([{ status: 'verification_failed', failure_code: 'INSUFFICIENT_BALANCE' }]);
    await env.network.faucet(buyer.publicKey(), 'USDC', '1');
    const ok = await verifyResource(c);
    expect(ok.status).toBe(200);
    const again = await verifyResource(c);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'REPLAY_DETECTED', details: [{ field: 'paymentAttemptId', message: ok.body.paymentAttemptId }] });
    expect(await attempts(buyer.publicKey())).toEqual([
      { status: 'verification_failed', failure_code: 'INSUFFICIENT_BALANCE' },
      { status: 'verified', failure_code: null },
    ]);
  });

  it('the cache asks the network once per refresh, and its margin always covers the ledgers closed since', async () => {
    const server = new rpc.Server(env.network.rpcUrl, { allowHttp: true });
    let calls = 0;
    let now = 0;
    const cache = new LatestLedgerCache(
      async () => {
        calls += 1;
        return (await server.getLatestLedger()).sequence;
      },
      { maxAgeMs: 1000, refreshAfterMs: 500 },
      () => now,
    );
    await cache.get('stellar:testnet');
    now = 300;
    await cache.get('stellar:testnet'); // no rate seen yet: asks again
    expect(calls).toBe(2);
    now = 400;
    const cached = await cache.get('stellar:testnet');
    expect(calls).toBe(2);
    expect(cached.ageMs).toBe(100);
    now = 2000;
    await cache.get('stellar:testnet'); // too old: asks
    expect(calls).toBe(3);

    const real = new LatestLedgerCache(async () => (await server.getLatestLedger()).sequence);
    for (let i = 0; i < 12; i += 1) {
      const r = await real.get('stellar:testnet');
      expect(r.sequence).toBeLessThanOrEqual(env.network.latestLedger());
      expect(r.sequence + r.marginLedgers).toBeGreaterThanOrEqual(env.network.latestLedger());
      await sleep(170);
    }
  });
});
