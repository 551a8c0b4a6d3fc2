// Bounded refusal work (issue #29 item 8): a refusal's work and size never grow with what an anonymous caller sent.
// One 240 KB body with 30,000 unknown properties used to cost ~0.4 s of CPU and answer 30,001 details (3.6 MB).
import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';
import { bearer, signUpSeller, type SignedUpSeller } from '../support/fixtures';

let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService();
  seller = await signUpSeller(svc.app);
});
afterAll(async () => {
  await svc.stop();
});

/** `n` properties with short names (`0`, `1`, ... in base 36), as in the review's 240 KB body. */
const manyFields = (n: number, prefix = '') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i.toString(36)}`, 1]));

describe('bounded refusal work', () => {
  it('a body with 30,000 unknown properties is refused with at most 20 details and a count', async () => {
    const body = JSON.stringify(manyFields(30_000));
    expect(body.length).toBeGreaterThan(230_000);
    const res = await request(svc.app).post('/v1/verify').set('Content-Type', 'application/json').send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_PAYMENT_PAYLOAD');
    expect(res.body.error.details).toHaveLength(20);
    expect(res.body.error.details[0]).toEqual({ field: '0', message: 'is not a field of this operation: remove it' });
    expect(res.body.error.detailsTotal).toBe(30_000);
    expect(res.body.error.message).toContain('and 29980 more (30000 problems in all');
    expect(res.text.length).toBeLessThan(8_000);
  });

  it(
    'a nested object with 25,000 unknown properties is refused with at most 20 details naming its path, and a ' +
      'count',
    async () => {
      const res = await request(svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: manyFields(25_000, 'x'), paymentRequirements: {} });
      expect(res.status).toBe(400);
      expect(res.body.error.details.length).toBeLessThanOrEqual(20);
      expect(res.body.error.details).toEqual(
        expect.arrayContaining([
          { field: 'paymentPayload.x0', message: 'is not a field of this operation: remove it' },
        ]),
      );
      expect(res.body.error.detailsTotal).toBeGreaterThanOrEqual(25_000);
      expect(res.text.length).toBeLessThan(8_000);
    },
  );

  it(
    'an array of 30,000 bad items where the contract allows 5 ' + 'is refused with one detail, not one per item',
    async () => {
      const res = await request(svc.app)
        .put(`/v1/sellers/${seller.id}/receipt-keys`)
        .set(bearer(seller.apiKey))
        .send({ keys: Array.from({ length: 30_000 }, () => 1) });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([{ field: 'keys', message: 'must NOT have more than 5 items' }]);
      expect(res.body.error.detailsTotal).toBeUndefined();
    },
  );

  it(
    'a few unknown fields are still named one by one beside every other problem of the request (issue #22 ' +
      'unchanged)',
    async () => {
      const res = await request(svc.app).post('/v1/verify').send({ paymentRequirements: {}, colour: 'red', size: 3 });
      expect(res.status).toBe(400);
      const fields = (res.body.error.details as Array<{ field?: string }>).map((d) => d.field);
      expect(fields).toEqual(expect.arrayContaining(['colour', 'size', 'paymentPayload']));
      expect(res.body.error.detailsTotal).toBeUndefined();
    },
  );

  it(
    "an unknown field whose name is 2,000 characters long is named clipped to the contract's 512, not answered " +
      '500',
    async () => {
      const res = await request(svc.app)
        .post('/v1/verify')
        .send({ ['n'.repeat(2000)]: 1 });
      expect(res.status).toBe(400);
      const named = (res.body.error.details as Array<{ field?: string }>).find((d) => d.field?.startsWith('nnn'));
      expect(named?.field?.length).toBe(512);
    },
  );

  it('unknown query parameters are refused with a bounded answer', async () => {
    const query = Array.from({ length: 900 }, (_, i) => `p${i}=1`).join('&');
    const res = await request(svc.app).get(`/v1/discovery/search?q=weather&${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error.details.length).toBeLessThanOrEqual(20);
    expect(res.text.length).toBeLessThan(8_000);
  });
});
