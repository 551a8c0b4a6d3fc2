import crypto from 'node:crypto';
import request from 'supertest';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, signUpSeller, type SignedUpSeller } from '../support/fixtures';

const LIMIT = 12;
let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService({ rateLimit: { points: LIMIT, windowSeconds: 600 } });
  seller = await signUpSeller(svc.app); // 2 requests from this IP (challenge + sign-up)
});
afterAll(async () => {
  await svc.stop();
});

const badKey = () => `mk_${crypto.randomBytes(24).toString('base64url')}`;

describe('rate limiting runs before authentication and covers every route', () => {
  it(
    'a flood of bad API keys is limited per client IP: 401 ' + 'until the budget is spent, then 429 RATE_LIMITED',
    async () => {
      const statuses: number[] = [];
      for (let i = 0; i < LIMIT; i += 1)
        statuses.push((await request(svc.app).get('/v1/resources').set(bearer(badKey()))).status);
      expect(statuses.filter((s) => s === 401).length).toBeGreaterThan(0);
      expect(statuses.slice(-1)[0]).toBe(429);
      const malformed = await request(svc.app).get('/v1/resources').set('Authorization', 'Basic abc');
      expect(malformed.status).toBe(429);
      expect(malformed.body.error.code).toBe('RATE_LIMITED');
      expect(Number(malformed.headers['retry-after'])).toBeGreaterThan(0);
    },
  );

  it('/health, /version, /metrics and /docs are limited too once the IP budget is spent', async () => {
    for (const path of ['/health', '/version', '/docs/', '/v1/networks']) {
      const res = await request(svc.app).get(path);
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('RATE_LIMITED');
    }
  });

  it('refusals of random paths are counted under fixed route labels (no new series per path)', async () => {
    const labels = async () =>
      (await svc.metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('api_rate_limited_total{')).length;
    await request(svc.app).get(`/v1/${crypto.randomBytes(4).toString('hex')}`);
    const before = await labels();
    for (let i = 0; i < 50; i += 1) await request(svc.app).get(`/v1/${crypto.randomBytes(4).toString('hex')}/${i}`);
    expect(await labels()).toBe(before);
  });

  it('a valid key has its own budget: it is not limited by the flood from its IP', async () => {
    const res = await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(seller.apiKey));
    expect(res.status).toBe(200);
    expect(Number(res.headers['ratelimit-remaining'])).toBe(LIMIT - 1);
    const metrics = await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY));
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/api_rate_limited_total\{route="\/health"/);
  });
});
