/**
 * Verify (/v1) keeps each cataloged resource's terms in its process (issue #31: one SQL statement less per verify).
 * Terms changed by ANOTHER process on the same database are never used to pass a payment: the record's insert checks
 * the resource's current terms in its own statement, and a payment refused on cached terms is judged again on fresh
 * ones. Two service instances on one database, the real local network, real HTTP.
 */
import request from 'supertest';
import type { Keypair } from '@stellar/stellar-sdk';
import type { Service } from '../../src/compose';
import { bearer, type SignedUpSeller } from '../support/fixtures';
import {
  fundedBuyer,
  paymentCase,
  secondService,
  sellerWithResource,
  startFacilitatorEnv,
  type FacilitatorEnv,
} from './helpers';

describe("verify's cached catalog terms across two processes", () => {
  let env: FacilitatorEnv;
  let other: Service;
  let buyer: Keypair;
  let seller: SignedUpSeller;
  let resourceId: string;

  beforeAll(async () => {
    env = await startFacilitatorEnv();
    other = await secondService(env);
    buyer = await fundedBuyer(env, '10');
    const made = await sellerWithResource(env, '0.01');
    seller = made.seller;
    resourceId = made.resource.id;
  });
  afterAll(async () => {
    await other?.close();
    await env?.stop();
  });

  const verify = async (amount: string) => {
    const c = await paymentCase(env, buyer, seller.wallet.publicKey(), amount);
    return request(env.svc.app)
      .post('/v1/verify')
      .set(bearer(seller.apiKey))
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId });
  };
  const attemptsAt = async (amount: string) =>
    Number(
      (
        (await env.svc.db.query(
          `SELECT count(*) AS n FROM payment_attempts WHERE resource_id = :id AND amount = :amount::numeric ` +
            `AND status = 'verified'`,
          { replacements: { id: resourceId, amount }, plain: true },
        )) as { n: string }
      ).n,
    );

  it(
    'a payment at the old price after another process changed it is refused, though this process cached the old ' +
      'terms; one at the new price passes',
    async () => {
      const first = await verify('0.01');
      expect(first.status).toBe(200);
      expect(first.body.status).toBe('verified'); // this process now holds the terms at 0.01

      const patched = await request(other.app)
        .patch(`/v1/resources/${resourceId}`)
        .set(bearer(seller.apiKey))
        .send({ amount: '0.02' });
      expect(patched.status).toBe(200);

      const stale = await verify('0.01');
      expect(stale.status).toBe(422);
      expect(stale.body.error.code).toBe('AMOUNT_MISMATCH');
      expect(await attemptsAt('0.01')).toBe(1); // only the first

      const fresh = await verify('0.02');
      expect(fresh.status).toBe(200);
      expect(fresh.body.status).toBe('verified');
      expect(await attemptsAt('0.02')).toBe(1);
    },
  );

  it('a resource another process took out of the catalog passes no more payments here', async () => {
    expect((await verify('0.02')).body.status).toBe('verified');
    const removed = await request(other.app).delete(`/v1/resources/${resourceId}`).set(bearer(seller.apiKey));
    expect(removed.status).toBeLessThan(300);
    const after = await verify('0.02');
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe('RESOURCE_NOT_FOUND');
  });
});
