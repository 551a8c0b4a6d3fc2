import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, type TestService } from '../support/test-service';
import { walletProof } from '../support/fixtures';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

describe('Idempotency-Key on POST', () => {
  it('a retry with the same key and body replays the first response and does the work once', async () => {
    const wallet = Keypair.random().publicKey();
    const first = await request(svc.app)
      .post('/v1/sellers/challenges')
      .set('Idempotency-Key', 'key-0001-aaaa')
      .send({ walletAddress: wallet });
    const second = await request(svc.app)
      .post('/v1/sellers/challenges')
      .set('Idempotency-Key', 'key-0001-aaaa')
      .send({ walletAddress: wallet });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body).toEqual(first.body);
    const [rows] = await svc.db.query(
      `SELECT count(*)::int AS n FROM seller_wallet_challenges WHERE wallet_address = '${wallet}'`,
    );
    expect(rows).toEqual([{ n: 1 }]);
  });

  it(
    'a retried sign-up runs once and never replays the API key: ' + '409 IDEMPOTENCY_CONFLICT naming the seller',
    async () => {
      const keypair = Keypair.random();
      const body = {
        displayName: 'Retry Co',
        walletAddress: keypair.publicKey(),
        domain: 'retry.example.com',
        walletProof: await walletProof(svc.app, keypair),
      };
      const first = await request(svc.app).post('/v1/sellers').set('Idempotency-Key', 'key-0004-dddd').send(body);
      const second = await request(svc.app).post('/v1/sellers').set('Idempotency-Key', 'key-0004-dddd').send(body);
      expect(first.status).toBe(201);
      expect(second.status).toBe(409);
      expect(second.body.error).toMatchObject({
        code: 'IDEMPOTENCY_CONFLICT',
        details: [{ field: 'sellerId', message: first.body.seller.id }],
      });
      expect(JSON.stringify(second.body)).not.toContain(first.body.apiKey);
      const [rows] = await svc.db.query(
        `SELECT count(*)::int AS n FROM sellers WHERE wallet_address = '${body.walletAddress}'`,
      );
      expect(rows).toEqual([{ n: 1 }]);
    },
  );

  it('the same key with a different body fails with IDEMPOTENCY_CONFLICT', async () => {
    const body = { walletAddress: Keypair.random().publicKey() };
    expect(
      (await request(svc.app).post('/v1/sellers/challenges').set('Idempotency-Key', 'key-0002-bbbb').send(body)).status,
    ).toBe(201);
    const res = await request(svc.app)
      .post('/v1/sellers/challenges')
      .set('Idempotency-Key', 'key-0002-bbbb')
      .send({ walletAddress: Keypair.random().publicKey() });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('concurrent requests with one key run the work once', async () => {
    const keypair = Keypair.random();
    const body = {
      displayName: 'Race Co',
      walletAddress: keypair.publicKey(),
      domain: 'race.example.com',
      walletProof: await walletProof(svc.app, keypair),
    };
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        request(svc.app).post('/v1/sellers').set('Idempotency-Key', 'key-0003-cccc').send(body),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    const [rows] = await svc.db.query(
      `SELECT count(*)::int AS n FROM sellers WHERE wallet_address = '${body.walletAddress}'`,
    );
    expect(rows).toEqual([{ n: 1 }]);
  });

  it('many requests with their own keys at once each run once, and each retry replays its own answer', async () => {
    // arriving together, their claims and stored answers share statements (coalesced): no answer may cross keys
    const calls = Array.from({ length: 24 }, (_, i) => ({
      key: `key-burst-${String(i).padStart(4, '0')}-dddd`,
      body: { walletAddress: Keypair.random().publicKey() },
    }));
    const first = await Promise.all(
      calls.map((c) => request(svc.app).post('/v1/sellers/challenges').set('Idempotency-Key', c.key).send(c.body)),
    );
    expect(first.map((r) => r.status)).toEqual(calls.map(() => 201));
    const again = await Promise.all(
      calls.map((c) => request(svc.app).post('/v1/sellers/challenges').set('Idempotency-Key', c.key).send(c.body)),
    );
    again.forEach((r, i) => {
      expect(r.status).toBe(201);
      expect(r.headers['idempotent-replayed']).toBe('true');
      expect(r.body).toEqual(first[i].body);
    });
    expect(new Set(first.map((r) => JSON.stringify(r.body))).size).toBe(calls.length);
  });
});
