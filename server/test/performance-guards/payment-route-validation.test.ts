/**
 * The verify and settle routes' fast path through express-openapi-validator (src/http/payment-route-validation.ts):
 * after the first request of a (path, Content-Type) pair, the library's route lookup is not run again for it, and
 * everything outside the fast path's conditions still takes the library's whole chain. The answers themselves are
 * pinned by facilitator/request-refusal-texts.test.ts.
 */
import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { OpenApiContext } = require('express-openapi-validator/dist/framework/openapi.context') as {
  OpenApiContext: { prototype: { routePair: (...args: unknown[]) => unknown } };
};

describe("the verify and settle routes' validator fast path", () => {
  let svc: TestService;
  let lookups = 0;
  const original = OpenApiContext.prototype.routePair;
  beforeAll(async () => {
    OpenApiContext.prototype.routePair = function counted(...args: unknown[]) {
      lookups += 1;
      return original.apply(this, args);
    };
    svc = await startTestService();
  });
  afterAll(async () => {
    OpenApiContext.prototype.routePair = original;
    await svc.stop();
  });

  const lookupsOf = async (send: () => request.Test) => {
    const before = lookups;
    const res = await send();
    return { status: res.status, lookups: lookups - before };
  };

  it('skips the route lookup once a route and content type were seen, for answers refused or passed on', async () => {
    const bad = { paymentPayload: 'x', paymentRequirements: {} };
    for (const path of ['/v1/verify', '/v1/settle', '/x402/verify', '/x402/settle']) {
      const first = await lookupsOf(() => request(svc.app).post(path).send(bad));
      expect([path, first.status, first.lookups > 0]).toEqual([path, 400, true]);
      const again = await lookupsOf(() => request(svc.app).post(path).send(bad));
      expect([path, again.status, again.lookups]).toEqual([path, 400, 0]);
    }
  });

  it('takes the whole chain for a query string, another case, a trailing slash, another content type', async () => {
    const body = { paymentPayload: 'x', paymentRequirements: {} };
    await request(svc.app).post('/v1/verify').send(body);
    for (const send of [
      () => request(svc.app).post('/v1/verify?x=1').send(body),
      () => request(svc.app).post('/V1/VERIFY').send(body),
      () => request(svc.app).post('/v1/verify/').send(body),
      () => request(svc.app).post('/v1/verify').set('content-type', 'text/plain').send(JSON.stringify(body)),
      () => request(svc.app).get('/v1/networks'),
    ]) {
      for (let i = 0; i < 2; i += 1) expect((await lookupsOf(send)).lookups).toBeGreaterThan(0);
    }
  });

  it('a stranger varying Content-Type parameters grows nothing: variants share the remembered route', async () => {
    const body = { paymentPayload: 'x', paymentRequirements: {} };
    const send = (contentType: string) => () =>
      request(svc.app).post('/v1/verify').set('content-type', contentType).send(JSON.stringify(body));
    await lookupsOf(send('application/json'));
    // the header the validator sees is the bare media type (http/validator-content-type.ts), so no variant is new
    const lookupsOfVariants: number[] = [];
    for (let i = 0; i < 70; i += 1) lookupsOfVariants.push((await lookupsOf(send(`Application/JSON; n=${i}`))).lookups);
    expect(lookupsOfVariants.filter((n) => n > 0)).toEqual([]);
  });
});
