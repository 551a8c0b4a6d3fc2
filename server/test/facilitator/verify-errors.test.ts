import request from 'supertest';
import { QueryTypes } from 'sequelize';
import { Keypair } from '@stellar/stellar-sdk';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  startFacilitatorEnv,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';

describe('facilitator: each verify and settle check answers its stable code', () => {
  let env: FacilitatorEnv;
  let buyer: Keypair;
  let payTo: string;
  let resourceId: string;

  beforeAll(async () => {
    env = await startFacilitatorEnv({ assets: ['USDC', 'EURC'] });
    buyer = await fundedBuyer(env, '5');
    const { seller, resource } = await sellerWithResource(env, '0.5');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
  });
  afterAll(() => env.stop());

  const verify = (c: PaymentCase) =>
    request(env.svc.app).post('/v1/verify').send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
  /** A verify for the seller's cataloged resource: its proven failures land in that seller's payment list. */
  const verifyFor = (c: PaymentCase) =>
    request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId });

  async function attemptRows(payer: string) {
    return (await env.svc.db.query(
      'SELECT status, failure_code FROM payment_attempts WHERE payer = :payer ORDER BY id',
      { replacements: { payer }, type: QueryTypes.SELECT },
    )) as Array<{
      status: string;
      failure_code: string | null;
    }>;
  }

  async function expectFailure(c: PaymentCase, status: number, code: string) {
    const res = await verify(c);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({
      ok: false,
      error: { code, message: expect.any(String), details: expect.any(Array), requestId: expect.any(String) },
    });
    expect(JSON.stringify(res.body)).not.toContain(c.payload.authorization.xdr);
    return res;
  }

  it('when the payload is malformed, verify fails with INVALID_PAYMENT_PAYLOAD', async () => {
    const c = await paymentCase(env, buyer, payTo, '0.5');
    c.payload.authorization = { format: 'sorobanAuthorizationEntry', xdr: 'AAAAAQ==' };
    await expectFailure(c, 400, 'INVALID_PAYMENT_PAYLOAD');
    const missing = await request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: { scheme: 'exact' }, paymentRequirements: c.requirements });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('INVALID_PAYMENT_PAYLOAD');
  });

  it('when the network is not supported, verify fails with UNSUPPORTED_NETWORK', async () => {
    const c = await paymentCase(env, buyer, payTo, '0.5', {
      payload: { network: 'stellar:futurenet' },
      requirements: { network: 'stellar:futurenet' },
    });
    await expectFailure(c, 400, 'UNSUPPORTED_NETWORK');
  });

  it('when the asset is not configured on the network, verify fails with UNSUPPORTED_ASSET', async () => {
    const other = { code: 'EURC', issuer: Keypair.random().publicKey() };
    const c = await paymentCase(env, buyer, payTo, '0.5', {
      payload: { asset: other },
      requirements: { asset: other },
    });
    await expectFailure(c, 400, 'UNSUPPORTED_ASSET');
  });

  it(
    'when the amount differs from the requirements, verify fails with AMOUNT_MISMATCH and nothing lands in the ' +
      "seller's payment list (the signature was never proven)",
    async () => {
      const payer = await fundedBuyer(env, '5');
      const c = await paymentCase(env, payer, payTo, '0.5', { requirements: { amount: '0.6' } });
      await expectFailure(c, 422, 'AMOUNT_MISMATCH');
      expect(await attemptRows(payer.publicKey())).toEqual([]);
    },
  );

  it('when the signed transfer amount differs from the payload amount, verify fails with AMOUNT_MISMATCH', async () => {
    const c = await paymentCase(env, buyer, payTo, '0.5', { sign: { amount: '0.4' } });
    await expectFailure(c, 422, 'AMOUNT_MISMATCH');
  });

  it('when the recipient differs from payTo, verify fails with RECIPIENT_MISMATCH', async () => {
    const c = await paymentCase(env, buyer, payTo, '0.5', { requirements: { payTo: Keypair.random().publicKey() } });
    await expectFailure(c, 422, 'RECIPIENT_MISMATCH');
    const signedElsewhere = await paymentCase(env, buyer, payTo, '0.5', {
      sign: { payTo: Keypair.random().publicKey() },
    });
    await expectFailure(signedElsewhere, 422, 'RECIPIENT_MISMATCH');
  });

  it('when the asset differs from the required asset, verify fails with ASSET_MISMATCH', async () => {
    const eurc = env.network.assets.find((a) => a.code !== 'USDC')!;
    const c = await paymentCase(env, buyer, payTo, '0.5', {
      requirements: { asset: { code: eurc.code, issuer: eurc.issuer } },
    });
    await expectFailure(c, 422, 'ASSET_MISMATCH');
    const otherContract = await paymentCase(env, buyer, payTo, '0.5', { sign: { contractId: eurc.contractId } });
    await expectFailure(otherContract, 422, 'ASSET_MISMATCH');
  });

  it("when the signature is not the payer's, verify fails with INVALID_SIGNATURE", async () => {
    const payer = await fundedBuyer(env, '5');
    const c = await paymentCase(env, payer, payTo, '0.5', { sign: { signer: Keypair.random() } });
    await expectFailure(c, 422, 'INVALID_SIGNATURE');
    const otherNetwork = await paymentCase(env, payer, payTo, '0.5', {
      sign: { passphrase: 'Public Global Stellar Network ; September 2015' },
    });
    await expectFailure(otherNetwork, 422, 'INVALID_SIGNATURE');
    expect(await attemptRows(payer.publicKey())).toEqual([]); // a made-up signature writes nothing
  });

  it('when the authorization expired, verify fails with AUTH_EXPIRED', async () => {
    const c = await paymentCase(env, buyer, payTo, '0.5', { sign: { expiration: env.network.latestLedger() } });
    await expectFailure(c, 422, 'AUTH_EXPIRED');
    const differs = await paymentCase(env, buyer, payTo, '0.5');
    differs.payload.expiresAtLedger += 1;
    await expectFailure(differs, 400, 'INVALID_PAYMENT_PAYLOAD'); // declared expiry is not the signed one
  });

  it(
    'when the payer has no trustline, verify fails with ' + "TRUSTLINE_REQUIRED saying it is the buyer's own wallet",
    async () => {
      const noTrust = await fundedBuyer(env, '0');
      const c = await paymentCase(env, noTrust, payTo, '0.5');
      const res = await expectFailure(c, 422, 'TRUSTLINE_REQUIRED');
      expect(res.body.error.message).toMatch(/^Your wallet has no USDC trustline \(payer G[A-Z2-7]{55}\)/);
      expect(res.body.error.message).toContain(noTrust.publicKey());
      expect(res.body.error.message).not.toContain("seller's wallet");
    },
  );

  it(
    "when the recipient has no trustline, verify fails with TRUSTLINE_REQUIRED saying the seller's wallet cannot " +
      'receive USDC',
    async () => {
      const recipient = Keypair.random();
      await env.network.fundAccount(recipient.publicKey());
      const c = await paymentCase(env, buyer, recipient.publicKey(), '0.5');
      const res = await expectFailure(c, 422, 'TRUSTLINE_REQUIRED');
      expect(res.body.error.message).toMatch(
        /^The seller's wallet cannot receive USDC: it has no USDC trustline \(payTo G[A-Z2-7]{55}\)/,
      );
      expect(res.body.error.message).toContain(recipient.publicKey());
      expect(res.body.error.message).not.toMatch(/your wallet/i);
      // the ledger's own words stay in the details, under the rule that judged them
      expect(res.body.error.details).toEqual([
        { code: 'simulation.succeeds', message: expect.stringContaining('Error(Contract, #13)') },
      ]);
    },
  );

  it(
    "when the seller's trustline is frozen between verify and settle, settle fails with TRUSTLINE_REQUIRED " +
      "saying the seller's wallet cannot receive USDC, nothing submitted",
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const wallet = seller.wallet.publicKey();
      const payer = await fundedBuyer(env, '5');
      const c = await paymentCase(env, payer, wallet, '0.5');
      const v = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId: resource.id });
      expect(v.status).toBe(200);
      await env.network.setTrustlineAuthorized(wallet, 'USDC', false);
      try {
        const res = await request(env.svc.app)
          .post('/v1/settle')
          .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
        expect(res.status).toBe(422);
        expect(res.body.error.code).toBe('TRUSTLINE_REQUIRED');
        expect(res.body.error.message).toMatch(
          /^The seller's wallet cannot receive USDC: the issuer has not authorized its USDC trustline \(payTo G[A-Z2-7]{55}\)/,
        );
        expect(res.body.error.message).toContain(wallet);
        expect(
          await env.svc.db.query('SELECT 1 FROM settlements WHERE payment_attempt_id = :id', {
            replacements: { id: v.body.paymentAttemptId },
            type: QueryTypes.SELECT,
          }),
        ).toEqual([]);
      } finally {
        await env.network.setTrustlineAuthorized(wallet, 'USDC', true);
      }
    },
  );

  it(
    "when the payer's trustline is frozen between verify and settle, settle fails with TRUSTLINE_REQUIRED saying " +
      "it is the buyer's own wallet",
    async () => {
      const payer = await fundedBuyer(env, '5');
      const c = await paymentCase(env, payer, payTo, '0.5');
      const v = await verifyFor(c);
      expect(v.status).toBe(200);
      await env.network.setTrustlineAuthorized(payer.publicKey(), 'USDC', false);
      const res = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('TRUSTLINE_REQUIRED');
      expect(res.body.error.message).toMatch(
        /^Your wallet's USDC trustline is not authorized by the issuer \(payer G[A-Z2-7]{55}\)/,
      );
      expect(res.body.error.message).toContain(payer.publicKey());
    },
  );

  it('when the payer balance is below the amount, verify fails with INSUFFICIENT_BALANCE', async () => {
    const poor = await fundedBuyer(env, '0.1');
    const c = await paymentCase(env, poor, payTo, '0.5');
    const res = await verifyFor(c);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('INSUFFICIENT_BALANCE');
    // the ledger got past the payer's authorization: a real signed payment for this seller's resource, recorded once
    await verifyFor(c);
    expect(await attemptRows(poor.publicKey())).toEqual([
      { status: 'verification_failed', failure_code: 'INSUFFICIENT_BALANCE' },
    ]);
  });

  it('when the same nonce is used by another authorization, verify fails with REPLAY_DETECTED', async () => {
    const payer = await fundedBuyer(env, '5');
    const first = await paymentCase(env, payer, payTo, '0.5');
    expect((await verify(first)).status).toBe(200);
    // Same nonce, different signed content (other expiration): a different authorization replaying the nonce.
    const replay = await paymentCase(env, payer, payTo, '0.5', {
      sign: { expiration: first.payload.expiresAtLedger + 1 },
    });
    const nonce = first.entry.credentials().address().nonce();
    replay.entry.credentials().address().nonce(nonce);
    const resigned = await (
      await import('@stellar/stellar-sdk')
    ).authorizeEntry(replay.entry, payer, first.payload.expiresAtLedger + 1, env.network.networkPassphrase);
    replay.payload.authorization = { format: 'sorobanAuthorizationEntry', xdr: resigned.toXDR('base64') };
    replay.payload.expiresAtLedger = first.payload.expiresAtLedger + 1;
    await expectFailure(replay, 409, 'REPLAY_DETECTED');
  });

  it(
    'when settle is sent with another payload than the verified one, settle fails with INVALID_PAYMENT_PAYLOAD; ' +
      'an unknown attempt is NOT_FOUND',
    async () => {
      const payer = await fundedBuyer(env, '5');
      const a = await paymentCase(env, payer, payTo, '0.5');
      const b = await paymentCase(env, payer, payTo, '0.5');
      const va = await verify(a);
      const res = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: va.body.paymentAttemptId, paymentPayload: b.payload, resourceId });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_PAYMENT_PAYLOAD');
      // b verified on its own attempt, then sent against a's attempt: a replay of another attempt's authorization.
      expect((await verify(b)).status).toBe(200);
      const crossed = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: va.body.paymentAttemptId, paymentPayload: b.payload, resourceId });
      expect(crossed.status).toBe(409);
      expect(crossed.body.error.code).toBe('REPLAY_DETECTED');
      const unknown = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: 'pay_01JD7A1B2C3D4E5F6G7H8J9K0M', paymentPayload: a.payload, resourceId });
      expect(unknown.status).toBe(404);
    },
  );

  it(
    'when a stranger sends settle a body off the contract (a number for the attempt id, an unknown field, an ' +
      'array), it is refused 400 INVALID_PAYMENT_PAYLOAD before any rule runs, and the verified attempt stays ' +
      'unsettled',
    async () => {
      const payer = await fundedBuyer(env, '5');
      const c = await paymentCase(env, payer, payTo, '0.5');
      const v = await verifyFor(c);
      expect(v.status).toBe(200);
      const id = v.body.paymentAttemptId as string;
      for (const body of [
        { paymentAttemptId: 42, paymentPayload: c.payload, resourceId },
        { paymentAttemptId: id, paymentPayload: c.payload, resourceId, payTo: Keypair.random().publicKey() },
        [id],
      ]) {
        const res = await request(env.svc.app)
          .post('/v1/settle')
          .send(body as object);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({
          ok: false,
          error: {
            code: 'INVALID_PAYMENT_PAYLOAD',
            message: expect.any(String),
            details: expect.any(Array),
            requestId: expect.any(String),
          },
        });
      }
      const [row] = (await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id },
        type: QueryTypes.SELECT,
      })) as Array<{ status: string }>;
      expect(row.status).toBe('verified');
      expect(
        await env.svc.db.query('SELECT 1 FROM settlements WHERE payment_attempt_id = :id', {
          replacements: { id },
          type: QueryTypes.SELECT,
        }),
      ).toEqual([]);
    },
  );

  it(
    'when the authorization expired before settle, settle fails ' + 'with AUTH_EXPIRED and the attempt becomes expired',
    async () => {
      const payer = await fundedBuyer(env, '5');
      const c = await paymentCase(env, payer, payTo, '0.5', { sign: { expiration: env.network.latestLedger() + 3 } });
      const v = await verify(c);
      expect(v.status).toBe(200);
      while (env.network.latestLedger() < c.payload.expiresAtLedger) await new Promise((r) => setTimeout(r, 50));
      const res = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('AUTH_EXPIRED');
      expect(await attemptRows(payer.publicKey())).toEqual([{ status: 'expired', failure_code: 'AUTH_EXPIRED' }]);
    },
  );

  it(
    'when the payer spent the money before settle, settle verifies again and fails with INSUFFICIENT_BALANCE ' +
      'before anything is claimed or submitted',
    async () => {
      const payer = await fundedBuyer(env, '1');
      const c = await paymentCase(env, payer, payTo, '0.5');
      const v = await verify(c);
      expect(v.status).toBe(200);
      // The payer spends the money elsewhere (another seller's 0.8 resource) between verify and settle.
      const other = await sellerWithResource(env, '0.8');
      const drain = await paymentCase(env, payer, other.seller.wallet.publicKey(), '0.8');
      const vd = await verify(drain);
      expect(vd.status).toBe(200);
      const drained = await request(env.svc.app).post('/v1/settle').send({
        paymentAttemptId: vd.body.paymentAttemptId,
        paymentPayload: drain.payload,
        resourceId: other.resource.id,
      });
      expect(drained.status).toBe(200);
      const res = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('INSUFFICIENT_BALANCE');
      const attempt = (await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id: v.body.paymentAttemptId },
        plain: true,
      })) as Record<string, string>;
      expect(attempt.status).toBe('verified');
      const settlements = await env.svc.db.query('SELECT id FROM settlements WHERE payment_attempt_id = :id', {
        replacements: { id: v.body.paymentAttemptId },
        type: QueryTypes.SELECT,
      });
      expect(settlements).toEqual([]);
      expect(env.network.balance(payer.publicKey(), 'USDC')).toBe('0.2');
    },
  );

  it('settle of an attempt that never verified fails with PAYMENT_REQUIRED', async () => {
    const payer = await fundedBuyer(env, '0.1');
    const c = await paymentCase(env, payer, payTo, '0.5');
    await verifyFor(c); // INSUFFICIENT_BALANCE -> verification_failed attempt
    const row = (await env.svc.db.query('SELECT id FROM payment_attempts WHERE payer = :p', {
      replacements: { p: payer.publicKey() },
      plain: true,
    })) as { id: string };
    const res = await request(env.svc.app)
      .post('/v1/settle')
      .send({ paymentAttemptId: row.id, paymentPayload: c.payload, resourceId });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('PAYMENT_REQUIRED');
  });
});
