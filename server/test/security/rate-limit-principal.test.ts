// Rate limits are per principal (issue #29 item 7): a seller's budget is the seller's, whichever of its keys is used,
// so minting more keys buys no more requests; the operator is one principal; anonymous callers count per client IP.
import request from 'supertest';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, signUpSeller, type SignedUpSeller } from '../support/fixtures';

const LIMIT = 10;
let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService({ rateLimit: { points: LIMIT, windowSeconds: 600 } });
  seller = await signUpSeller(svc.app); // challenge + sign-up: 2 requests from this IP, none against the seller
});
afterAll(async () => {
  await svc.stop();
});

const mint = async (auth: string, scope: 'admin' | 'payments') => {
  const res = await request(svc.app)
    .post(`/v1/sellers/${seller.id}/keys`)
    .set(bearer(auth))
    .send({ name: `minted-${scope}-${Date.now()}`, scope });
  expect(res.status).toBe(201);
  return res.body.secret as string;
};
const readPayments = (key: string) => request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(key));

describe('rate limits per principal', () => {
  it("when a stranger mints a second key, the seller's rate limit is not reset", async () => {
    // Whoever holds the seller's admin key mints two more keys (2 requests of the seller's budget) ...
    const second = await mint(seller.apiKey, 'admin');
    const third = await mint(second, 'payments');
    // ... spends what is left with the first key ...
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT - 2; i++) statuses.push((await readPayments(seller.apiKey)).status);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect((await readPayments(seller.apiKey)).status).toBe(429);
    // ... and the minted keys have no budget of their own: they draw on the same, spent, seller budget.
    for (const key of [second, third]) {
      const res = await readPayments(key);
      expect([res.status, res.body.error?.code]).toEqual([429, 'RATE_LIMITED']);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    // Minting one more key is refused too: the seller's budget pays for the mint.
    const again = await request(svc.app)
      .post(`/v1/sellers/${seller.id}/keys`)
      .set(bearer(second))
      .send({ name: 'one-more', scope: 'admin' });
    expect(again.status).toBe(429);
  });

  it(
    'a spent seller budget does not limit anonymous callers or the operator, which count as principals of their ' +
      'own',
    async () => {
      const anonymous = await request(svc.app).get('/v1/networks');
      expect(anonymous.status).toBe(200);
      const operator = await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(OPERATOR_KEY));
      expect(operator.status).toBe(200);
      expect(Number(operator.headers['ratelimit-remaining'])).toBe(LIMIT - 1);
    },
  );
});
