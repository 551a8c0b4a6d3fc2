/**
 * The HTTP layer's shortcuts (issue #14) keep their guarantees: the in-process rate-limit leases never let processes
 * together admit more than the shared limit; a cached API key stops working when it is revoked (after the cache's
 * TTL, or at once when forgotten); the one-statement idempotency claim still takes over only expired or abandoned
 * claims. Real PostgreSQL, real HTTP (supertest), the real service.
 */
import { Keypair } from '@stellar/stellar-sdk';
import express from 'express';
import request from 'supertest';
import { createService } from '../../src/compose';
import { createSellerRepository } from '../../src/data/seller-repository';
import { ApiKeyCache, resolveCredentials, rejectBadCredentials } from '../../src/http/authenticate';
import { errorHandler } from '../../src/http/error-handler';
import { leaseSize } from '../../src/http/rate-limit';
import { startTestService, testNetworks, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, signUpSeller } from '../support/fixtures';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * One default service for the key-cache, idempotency and Server-Timing tests (their keys and rows are their own): a
 * service start is ~1.2 s of CPU, and this file runs in the serial lane.
 */
let shared: Promise<TestService> | undefined;
const sharedService = () => (shared ??= startTestService());
afterAll(async () => {
  await (await shared?.catch(() => undefined))?.stop();
});

describe('rate limiting with per-process leases', () => {
  const LIMIT = 300; // lease of 3 points per process
  const WINDOW = 600;
  let a: TestService;
  let b: Awaited<ReturnType<typeof createService>>;
  beforeAll(async () => {
    a = await startTestService({ rateLimit: { points: LIMIT, windowSeconds: WINDOW } });
    b = await createService({
      databaseUrl: a.databaseUrl,
      environment: 'test',
      version: 'x',
      commit: null,
      networks: testNetworks(),
      operatorApiKey: OPERATOR_KEY,
      rateLimit: { points: LIMIT, windowSeconds: WINDOW },
      bodyLimitBytes: 256 * 1024,
      responseValidation: false,
      logger: silent,
    });
  });
  afterAll(async () => {
    await b.close();
    await a.stop();
  });

  it(
    'two processes on one database, hit alternately and concurrently, admit no more than the limit together, and ' +
      'refuse with Retry-After',
    async () => {
      expect(leaseSize(LIMIT)).toBe(3);
      const statuses: number[] = [];
      let lastRefusal: request.Response | undefined;
      // alternating, then bursts of concurrent requests to both, until well past the limit
      for (let i = 0; i < 40; i += 1) statuses.push((await request(i % 2 ? a.app : b.app).get('/v1/networks')).status);
      while (statuses.length < LIMIT + 60) {
        const burst = await Promise.all(
          Array.from({ length: 20 }, (_, i) => request(i % 2 ? a.app : b.app).get('/v1/networks')),
        );
        for (const r of burst) {
          statuses.push(r.status);
          if (r.status === 429) lastRefusal = r;
        }
      }
      const admitted = statuses.filter((s) => s === 200).length;
      expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
      expect(admitted).toBeLessThanOrEqual(LIMIT);
      // each process may hold at most lease − 1 unused points: the documented tolerance
      expect(admitted).toBeGreaterThanOrEqual(LIMIT - 2 * (leaseSize(LIMIT) - 1));
      expect(lastRefusal!.body.error.code).toBe('RATE_LIMITED');
      const retryAfter = Number(lastRefusal!.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(WINDOW);
      // the shared counter holds every point either process admitted
      const [rows] = await a.db.query(
        `SELECT points FROM rate_limits WHERE key = 'api:ip:::ffff:127.0.0.1' OR key = 'api:ip:127.0.0.1'`,
      );
      expect((rows as Array<{ points: number }>).reduce((n, r) => n + Number(r.points), 0)).toBeGreaterThanOrEqual(
        admitted,
      );
    },
  );

  it('a valid key has its own budget in both processes, and RateLimit-Remaining counts down', async () => {
    // this IP's budget is spent (previous test); the operator key has a bucket of its own
    const first = await request(a.app).get('/v1/networks').set(bearer(OPERATOR_KEY));
    const second = await request(b.app).get('/v1/networks').set(bearer(OPERATOR_KEY));
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(Number(first.headers['ratelimit-remaining'])).toBeLessThan(LIMIT);
    const third = await request(a.app).get('/v1/networks').set(bearer(OPERATOR_KEY));
    expect(Number(third.headers['ratelimit-remaining'])).toBe(Number(first.headers['ratelimit-remaining']) - 1);
  });
});

describe('the API-key cache', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await sharedService();
  });

  function whoAmI(cache: ApiKeyCache) {
    const app = express();
    app.use(resolveCredentials({ sellers: createSellerRepository(svc.db), operatorApiKey: null, cache }));
    app.use(rejectBadCredentials());
    app.get('/me', (_req, res) => {
      res.json(res.locals.principal);
    });
    app.use(errorHandler(silent));
    return app;
  }

  it('a key revoked in the database keeps working at most for the TTL, then answers 401', async () => {
    const seller = await signUpSeller(svc.app);
    let now = 1_000_000;
    const app = whoAmI(new ApiKeyCache(30_000, 100, () => now));
    const before = await request(app).get('/me').set(bearer(seller.apiKey));
    expect(before.status).toBe(200);
    expect(before.body).toMatchObject({ role: 'seller', sellerId: seller.id });
    await svc.db.query(`UPDATE api_keys SET revoked_at = now() WHERE seller_id = :id`, {
      replacements: { id: seller.id },
    });
    now += 29_000;
    expect((await request(app).get('/me').set(bearer(seller.apiKey))).status).toBe(200);
    now += 1_001;
    const after = await request(app).get('/me').set(bearer(seller.apiKey));
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('UNAUTHORIZED');
    // the real service refuses it too (its cache never held this key, or has expired it)
    expect((await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(seller.apiKey))).status).toBe(
      401,
    );
  });

  it('a key forgotten by the process that revokes it answers 401 at once', async () => {
    const seller = await signUpSeller(svc.app);
    const cache = new ApiKeyCache(30_000, 100);
    const app = whoAmI(cache);
    const ok = await request(app).get('/me').set(bearer(seller.apiKey));
    expect(ok.status).toBe(200);
    await svc.db.query(`UPDATE api_keys SET revoked_at = now() WHERE seller_id = :id`, {
      replacements: { id: seller.id },
    });
    cache.forget(ok.body.keyId);
    expect((await request(app).get('/me').set(bearer(seller.apiKey))).status).toBe(401);
  });

  it('an unknown key is never cached: a key created after a miss is accepted at once', async () => {
    const cache = new ApiKeyCache(30_000, 100);
    const app = whoAmI(cache);
    const seller = await signUpSeller(svc.app);
    const [[row]] = (await svc.db.query(`SELECT key_hash FROM api_keys WHERE seller_id = :id`, {
      replacements: { id: seller.id },
    })) as [Array<{ key_hash: Buffer }>, unknown];
    await svc.db.query(`UPDATE api_keys SET key_hash = :other WHERE seller_id = :id`, {
      replacements: { id: seller.id, other: Buffer.alloc(32, 7) },
    });
    expect((await request(app).get('/me').set(bearer(seller.apiKey))).status).toBe(401);
    await svc.db.query(`UPDATE api_keys SET key_hash = :hash WHERE seller_id = :id`, {
      replacements: { id: seller.id, hash: row.key_hash },
    });
    expect((await request(app).get('/me').set(bearer(seller.apiKey))).status).toBe(200);
  });

  it('holds at most its bound: the least recently used key is dropped', async () => {
    const cache = new ApiKeyCache(30_000, 2);
    const rec = (id: string) => ({
      id,
      sellerId: 's',
      role: 'seller' as const,
      scope: 'admin' as const,
      expiresAt: null,
    });
    cache.set(Buffer.from('a'), rec('a'));
    cache.set(Buffer.from('b'), rec('b'));
    expect(cache.get(Buffer.from('a'))?.id).toBe('a'); // a is now the most recently used
    cache.set(Buffer.from('c'), rec('c'));
    expect(cache.get(Buffer.from('b'))).toBeNull();
    expect(cache.get(Buffer.from('a'))?.id).toBe('a');
    expect(cache.get(Buffer.from('c'))?.id).toBe('c');
  });
});

describe('the idempotency claim in one statement', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await sharedService();
  });
  const challenge = (key: string) =>
    request(svc.app)
      .post('/v1/sellers/challenges')
      .set('Idempotency-Key', key)
      .send({ walletAddress: Keypair.random().publicKey() });

  it('a key whose record expired (over 24 h) runs again, with a different body', async () => {
    expect((await challenge('guard-expired-0001')).status).toBe(201);
    expect((await challenge('guard-expired-0001')).body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    await svc.db.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'guard-expired-0001'`,
    );
    const again = await challenge('guard-expired-0001');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
  });

  it('an abandoned claim (no answer after 60 s) is taken over; a fresh one still in progress is 409', async () => {
    await svc.db.query(
      `INSERT INTO idempotency_keys (scope, key, request_hash) VALUES ('ip:::ffff:127.0.0.1', ` +
        `'guard-claim-0001', 'x'), ('ip:127.0.0.1', 'guard-claim-0001', 'x')`,
    );
    const busy = await challenge('guard-claim-0001');
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    await svc.db.query(
      `UPDATE idempotency_keys SET created_at = now() - interval '61 seconds' WHERE key = 'guard-claim-0001'`,
    );
    const taken = await challenge('guard-claim-0001');
    expect(taken.status).toBe(201);
    const [rows] = await svc.db.query(
      `SELECT status_code FROM idempotency_keys WHERE key = 'guard-claim-0001' AND status_code IS NOT NULL`,
    );
    expect(rows).toEqual([{ status_code: 201 }]);
  });
});

describe('Server-Timing (SERVER_TIMING: measurement only)', () => {
  let svc: TestService;
  let timed: Awaited<ReturnType<typeof createService>>;
  beforeAll(async () => {
    svc = await sharedService();
    timed = await createService({
      databaseUrl: svc.databaseUrl,
      environment: 'test',
      version: 'x',
      commit: null,
      networks: testNetworks(),
      operatorApiKey: OPERATOR_KEY,
      rateLimit: { points: 10_000, windowSeconds: 60 },
      bodyLimitBytes: 256 * 1024,
      responseValidation: false,
      logger: silent,
      serverTiming: true,
    });
  });
  afterAll(async () => {
    await timed.close();
  });
  const challenge = (app: typeof svc.app, key: string) =>
    request(app)
      .post('/v1/sellers/challenges')
      .set('Idempotency-Key', key)
      .set('X-Server-Timing', '1')
      .send({ walletAddress: Keypair.random().publicKey() });

  it('is off by default: no answer, success or refusal, tells a caller where its time went', async () => {
    expect((await challenge(svc.app, 'timing-off-0001')).headers['server-timing']).toBeUndefined();
    const refused = await request(svc.app).get('/v1/nowhere').set('X-Server-Timing', '1');
    expect(refused.headers['server-timing']).toBeUndefined();
  });

  it('on, only a request that asks gets it', async () => {
    const res = await request(timed.app).get('/v1/networks');
    expect(res.status).toBe(200);
    expect(res.headers['server-timing']).toBeUndefined();
  });

  it('on, an answer names its stages in order, from the first middleware to the stored answer', async () => {
    const before = Date.now();
    const res = await challenge(timed.app, 'timing-on-0001');
    const after = Date.now();
    expect(res.status).toBe(201);
    const items = String(res.headers['server-timing'])
      .split(', ')
      .map((item) => item.split(';'));
    const recv = Number(/^desc="(.+)"$/.exec(items[0][1])?.[1]);
    expect(items[0][0]).toBe('recv');
    expect(recv).toBeGreaterThanOrEqual(before - 1);
    expect(recv).toBeLessThanOrEqual(after + 1);
    const stages = items.slice(1).map(([name, dur]) => [name, Number(dur.replace('dur=', ''))] as const);
    expect(stages.map(([name]) => name)).toEqual([
      'start',
      'requestId',
      'metrics',
      'credentials',
      'rateLimit',
      'badCredentials',
      'accessPolicy',
      'bodyParser',
      'admission',
      'validator',
      'challengeLimit',
      'idempotency',
      'handler',
      'respond',
      'idempotencyStore',
      'write',
    ]);
    for (const [, ms] of stages) expect(ms).toBeGreaterThanOrEqual(0);
    expect(stages.reduce((sum, [, ms]) => sum + ms, 0)).toBeLessThanOrEqual(after - before + 1);
  });
});
