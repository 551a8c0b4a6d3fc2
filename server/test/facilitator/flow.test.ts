import request from 'supertest';
import type { Keypair } from '@stellar/stellar-sdk';
import { bearer, signUpSeller } from '../support/fixtures';
import { OPERATOR_KEY } from '../support/test-service';
import { fundedBuyer, paymentCase, sellerWithResource, startFacilitatorEnv, type FacilitatorEnv } from './helpers';

describe('facilitator: verify, settle and read a payment on the local network', () => {
  let env: FacilitatorEnv;
  let buyer: Keypair;

  beforeAll(async () => {
    env = await startFacilitatorEnv();
    buyer = await fundedBuyer(env, '10');
  });
  afterAll(() => env.stop());

  it('GET /v1/supported lists the exact scheme per network with its assets', async () => {
    const res = await request(env.svc.app).get('/v1/supported');
    expect(res.status).toBe(200);
    expect(res.body.extensions).toEqual({ bazaar: true, upto: false });
    expect(res.body.schemes).toEqual(
      expect.arrayContaining([
        {
          name: 'exact',
          network: 'stellar:testnet',
          assets: expect.arrayContaining([{ code: 'USDC', issuer: env.usdc.issuer }]),
        },
      ]),
    );
    expect(res.body.schemes.map((s: { network: string }) => s.network)).toEqual(['stellar:testnet', 'stellar:pubnet']);
  });

  it(
    'a buyer pays a seller: verify, settle, and the balances move by exactly the amount; payment, settlement and ' +
      'receipt read back',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.25');
      const payTo = seller.wallet.publicKey();
      const c = await paymentCase(env, buyer, payTo, '0.25', {
        requirements: { resource: `https://${seller.domain}/v1/forecast/Lisbon` },
      });

      const verified = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
      expect(verified.status).toBe(200);
      expect(verified.body).toEqual({
        ok: true,
        paymentAttemptId: expect.stringMatching(/^pay_/),
        paymentHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        network: 'stellar:testnet',
        status: 'verified',
        payer: buyer.publicKey(),
        expiresAtLedger: c.payload.expiresAtLedger,
      });
      const row = (await env.svc.db.query('SELECT * FROM payment_attempts WHERE id = :id', {
        replacements: { id: verified.body.paymentAttemptId },
        plain: true,
      })) as Record<string, unknown>;
      expect(row).toMatchObject({
        status: 'verified',
        resource_id: resource.id,
        seller_id: seller.id,
        version_id: resource.versionId,
        payer: buyer.publicKey(),
      });

      // One signed payment is verified once: a second verify of the same authorization is refused.
      const again = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('REPLAY_DETECTED');

      const buyerBefore = env.network.balance(buyer.publicKey(), 'USDC');
      const sellerBefore = env.network.balance(payTo, 'USDC');
      const settled = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
      expect(settled.status).toBe(200);
      expect(settled.body).toEqual({
        ok: true,
        settlementId: expect.stringMatching(/^stl_/),
        receiptId: expect.stringMatching(/^rcp_/),
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        ledger: expect.any(Number),
        network: 'stellar:testnet',
        status: 'settled',
        evidence: 'local_simulation',
      });
      expect(buyerBefore).toBe('10');
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('9.75');
      expect(sellerBefore).toBe('0.0000001');
      expect(env.network.balance(payTo, 'USDC')).toBe('0.2500001');

      // A second settle of the same payment (no Idempotency-Key) is a replay; the money does not move again.
      const retry = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
      expect(retry.status).toBe(409);
      expect(retry.body.error.code).toBe('REPLAY_DETECTED');
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('9.75');

      // Verifying it once it settled is a replay.
      const replay = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
      expect(replay.status).toBe(409);
      expect(replay.body.error.code).toBe('REPLAY_DETECTED');

      const payment = await request(env.svc.app)
        .get(`/v1/payments/${verified.body.paymentAttemptId}`)
        .set(bearer(seller.apiKey));
      expect(payment.status).toBe(200);
      expect(payment.body).toMatchObject({
        id: verified.body.paymentAttemptId,
        status: 'settled',
        amount: '0.25',
        payTo,
        payer: buyer.publicKey(),
        resourceId: resource.id,
        settlementId: settled.body.settlementId,
        receiptId: settled.body.receiptId,
        transactionHash: settled.body.transactionHash,
        links: {
          self: `/v1/payments/${verified.body.paymentAttemptId}`,
          settlement: `/v1/settlements/${settled.body.transactionHash}`,
          receipt: `/v1/receipts/${settled.body.receiptId}`,
        },
      });
      expect(JSON.stringify(payment.body)).not.toContain(c.payload.authorization.xdr);

      const operator = await request(env.svc.app)
        .get(`/v1/payments/${verified.body.paymentAttemptId}`)
        .set(bearer(OPERATOR_KEY));
      expect(operator.status).toBe(200);
      const other = await signUpSeller(env.svc.app);
      const forbidden = await request(env.svc.app)
        .get(`/v1/payments/${verified.body.paymentAttemptId}`)
        .set(bearer(other.apiKey));
      expect(forbidden.status).toBe(403);
      expect(forbidden.body.error.code).toBe('FORBIDDEN');
      const anonymous = await request(env.svc.app).get(`/v1/payments/${verified.body.paymentAttemptId}`);
      expect(anonymous.status).toBe(401);

      const settlement = await request(env.svc.app).get(`/v1/settlements/${settled.body.transactionHash}`);
      expect(settlement.status).toBe(200);
      expect(settlement.body).toMatchObject({
        id: settled.body.settlementId,
        paymentAttemptId: verified.body.paymentAttemptId,
        transactionHash: settled.body.transactionHash,
        ledger: settled.body.ledger,
        amount: '0.25',
        assetCode: 'USDC',
        assetIssuer: env.usdc.issuer,
        status: 'settled',
        evidence: 'local_simulation',
        settledAt: expect.any(String),
      });
      const receipt = await request(env.svc.app).get(`/v1/receipts/${settled.body.receiptId}`);
      expect(receipt.status).toBe(200);
      expect(receipt.body).toMatchObject({
        id: settled.body.receiptId,
        settlementId: settled.body.settlementId,
        resourceId: resource.id,
        sellerId: seller.id,
        versionId: resource.versionId,
        transactionHash: settled.body.transactionHash,
        amount: '0.25',
        status: 'settled',
        evidence: 'local_simulation',
        failureCode: null,
      });
      for (const body of [settlement.body, receipt.body]) {
        expect(JSON.stringify(body)).not.toContain(buyer.publicKey());
      }
      const unknown = await request(env.svc.app).get('/v1/receipts/rcp_01JD7A1C5E0F1G2H3J4K5M6N7P');
      expect(unknown.status).toBe(404);
    },
  );

  it('an x402 transaction envelope is accepted as the authorization (format transaction)', async () => {
    const { seller, resource } = await sellerWithResource(env, '0.1');
    const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.1', { format: 'transaction' });
    const verified = await request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId: resource.id });
    expect(verified.status).toBe(200);
    const before = env.network.balance(buyer.publicKey(), 'USDC');
    const settled = await request(env.svc.app)
      .post('/v1/settle')
      .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
    expect(settled.status).toBe(200);
    expect(settled.body.status).toBe('settled');
    expect(Number(before) - Number(env.network.balance(buyer.publicKey(), 'USDC'))).toBeCloseTo(0.1, 7);
  });

  it('exposes facilitator metrics labelled by network', async () => {
    const res = await request(env.svc.app).get('/metrics').set(bearer(OPERATOR_KEY));
    expect(res.text).toMatch(/facilitator_verify_total\{[^}]*network="stellar:testnet"[^}]*outcome="success"/);
    expect(res.text).toMatch(/facilitator_settle_total\{[^}]*outcome="success"/);
    expect(res.text).toMatch(/ledger_rpc_requests_total\{[^}]*method="getLatestLedger"/);
    expect(res.text).toMatch(/ledger_latest_observed\{[^}]*network="stellar:testnet"/);
    expect(res.text).toMatch(/facilitator_replay_detected_total\{[^}]*operation="verify"/);
  });
});
