import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, type TestService } from '../support/test-service';
import { bearer, signUpSeller, walletProof } from '../support/fixtures';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

describe('POST /v1/sellers', () => {
  it('creates a seller and returns its API key once, storing only a hash of it', async () => {
    const keypair = Keypair.random();
    const wallet = keypair.publicKey();
    const res = await request(svc.app)
      .post('/v1/sellers')
      .send({
        displayName: 'Acme Data',
        walletAddress: wallet,
        domain: 'data.acme.example.com',
        walletProof: await walletProof(svc.app, keypair),
      });
    expect(res.status).toBe(201);
    expect(res.body.seller).toMatchObject({
      displayName: 'Acme Data',
      walletAddress: wallet,
      domain: 'data.acme.example.com',
      domainVerifiedAt: null,
      verificationStatus: 'unverified',
    });
    expect(res.body.seller.id).toMatch(/^sel_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(res.body.apiKey).toMatch(/^mk_[A-Za-z0-9_-]{43}$/);
    const [rows] = await svc.db.query(
      `SELECT encode(key_hash, 'hex') AS h FROM api_keys WHERE seller_id = '${res.body.seller.id}'`,
    );
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(res.body.apiKey);
    const again = await request(svc.app).get(`/v1/sellers/${res.body.seller.id}`);
    expect(again.status).toBe(200);
    expect(JSON.stringify(again.body)).not.toContain(res.body.apiKey);
    expect(again.body).not.toHaveProperty('apiKey');
  });

  it('when the wallet address is already registered, it fails with CONFLICT', async () => {
    const keypair = Keypair.random();
    const body = { displayName: 'One', walletAddress: keypair.publicKey(), domain: 'one.example.com' };
    expect(
      (
        await request(svc.app)
          .post('/v1/sellers')
          .send({ ...body, walletProof: await walletProof(svc.app, keypair) })
      ).status,
    ).toBe(201);
    const res = await request(svc.app)
      .post('/v1/sellers')
      .send({ ...body, domain: 'two.example.com', walletProof: await walletProof(svc.app, keypair) });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ ok: false, error: { code: 'CONFLICT' } });
  });

  it('when the wallet address has a bad checksum, it fails with INVALID_REQUEST naming the field', async () => {
    const good = Keypair.random().publicKey();
    const bad = good.slice(0, 55) + (good[55] === 'A' ? 'B' : 'A');
    const res = await request(svc.app)
      .post('/v1/sellers')
      .send({
        displayName: 'X',
        walletAddress: bad,
        domain: 'x.example.com',
        walletProof: { challengeId: `wch_${'a'.repeat(32)}`, signature: 'A'.repeat(86) + '==' },
      });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(res.body.error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'walletAddress' })]),
    );
  });

  it('when the domain is an IP address or localhost, it fails with INVALID_REQUEST', async () => {
    for (const domain of ['127.0.0.1', 'localhost']) {
      const keypair = Keypair.random();
      const res = await request(svc.app)
        .post('/v1/sellers')
        .send({
          displayName: 'X',
          walletAddress: keypair.publicKey(),
          domain,
          walletProof: await walletProof(svc.app, keypair),
        });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
  });

  it(
    'when the domain is localhost or *.localhost, the refusal ' + 'names the *.test rule and LOCAL_DEV_DOMAINS',
    async () => {
      for (const domain of ['localhost', 'shop.localhost', '127.0.0.1']) {
        const keypair = Keypair.random();
        const res = await request(svc.app)
          .post('/v1/sellers')
          .send({
            displayName: 'X',
            walletAddress: keypair.publicKey(),
            domain,
            walletProof: await walletProof(svc.app, keypair),
          });
        expect(res.status).toBe(400);
        const detail = res.body.error.details.find((d: { field?: string }) => d.field === 'domain');
        expect(detail.message).toMatch(/\.test/);
        expect(detail.message).toContain('LOCAL_DEV_DOMAINS=true');
      }
    },
  );

  it(
    'when required fields are missing, the validator answers INVALID_REQUEST in the one envelope with a request ' +
      'id',
    async () => {
      const res = await request(svc.app).post('/v1/sellers').send({ displayName: 'X' });
      expect(res.status).toBe(400);
      expect(res.body.ok).toBe(false);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
      expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
      expect(res.body.error.details.length).toBeGreaterThan(0);
    },
  );
});

describe('GET /v1/sellers/:sellerId', () => {
  it('returns the seller profile and verification state', async () => {
    const seller = await signUpSeller(svc.app);
    const res = await request(svc.app).get(`/v1/sellers/${seller.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: seller.id,
      walletAddress: seller.wallet.publicKey(),
      verificationStatus: 'unverified',
      domainVerifiedAt: null,
    });
  });

  it('when the seller does not exist, it answers 404 NOT_FOUND', async () => {
    const res = await request(svc.app).get('/v1/sellers/sel_01JD6Y2B7C4D5E6F7G8H9J0K1M');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
  });
});

describe('GET /v1/sellers/:sellerId/payments', () => {
  it('lists the seller’s payments (empty before any payment) for the seller itself', async () => {
    const seller = await signUpSeller(svc.app);
    const res = await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(seller.apiKey));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], nextCursor: null });
  });

  it('when another seller asks, it answers 403 FORBIDDEN; without a key, 401 UNAUTHORIZED', async () => {
    const a = await signUpSeller(svc.app);
    const b = await signUpSeller(svc.app);
    const forbidden = await request(svc.app).get(`/v1/sellers/${a.id}/payments`).set(bearer(b.apiKey));
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('FORBIDDEN');
    const anonymous = await request(svc.app).get(`/v1/sellers/${a.id}/payments`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHORIZED');
  });

  it('when the key is unknown, every endpoint answers 401 UNAUTHORIZED, public ones too', async () => {
    const res = await request(svc.app).get('/v1/resources').set(bearer('mk_this_key_does_not_exist_0000000000000000'));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });
});
