import request from 'supertest';
import { waitFor } from '../discovery/helpers';
import {
  startFacilitatorEnv,
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  type FacilitatorEnv,
} from '../facilitator/helpers';

let env: FacilitatorEnv;
beforeAll(async () => {
  env = await startFacilitatorEnv();
});
afterAll(async () => {
  await env.stop();
});

describe('GET /v1/stats (public)', () => {
  it(
    'shows settlements and their transaction hashes per network (never summed across networks), latency, and ' +
      'nothing that identifies a buyer',
    async () => {
      const empty = await request(env.svc.app).get('/v1/stats');
      // The answer is cached for 5 seconds: asked again at once, the same body comes back.
      const cached = await request(env.svc.app).get('/v1/stats');
      expect(cached.body.generatedAt).toBe(empty.body.generatedAt);
      expect(empty.status).toBe(200);
      expect(empty.headers['cache-control']).toBe('public, max-age=5');
      expect(empty.body.networks).toEqual([
        {
          network: 'stellar:testnet',
          evidence: 'local_simulation',
          successfulSettlements: 0,
          latestTransactionHashes: [],
        },
        {
          network: 'stellar:pubnet',
          evidence: 'mainnet_verification',
          successfulSettlements: 0,
          latestTransactionHashes: [],
        },
      ]);
      expect(empty.body.conformance).toEqual({ latest: null });

      const buyer = await fundedBuyer(env, '5');
      const { seller, resource } = await sellerWithResource(env, '0.25');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25');
      const verified = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
      const settled = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
      expect(settled.status).toBe(200);

      let res = await request(env.svc.app).get('/v1/stats');
      await waitFor(async () => {
        res = await request(env.svc.app).get('/v1/stats');
        return res.body.networks[0].successfulSettlements === 1;
      });
      expect(res.status).toBe(200);
      expect(res.body.networks).toEqual([
        {
          network: 'stellar:testnet',
          evidence: 'local_simulation',
          successfulSettlements: 1,
          latestTransactionHashes: [settled.body.transactionHash],
        },
        {
          network: 'stellar:pubnet',
          evidence: 'mainnet_verification',
          successfulSettlements: 0,
          latestTransactionHashes: [],
        },
      ]);
      expect(res.body.api.requests).toBeGreaterThanOrEqual(5);
      expect(res.body.api.p50Ms).toBeGreaterThan(0);
      expect(res.body.api.p95Ms).toBeGreaterThanOrEqual(res.body.api.p50Ms);
      expect(res.body.catalog).toEqual({ indexedResources: expect.any(Number), activeSellers: expect.any(Number) });
      expect(res.body.uptimeSeconds).toBeGreaterThanOrEqual(0);
      const text = JSON.stringify(res.body);
      expect(text).not.toContain(buyer.publicKey());
      expect(text).not.toContain(verified.body.paymentAttemptId);
    },
  );
});
