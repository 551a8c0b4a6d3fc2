import express from 'express';
import request from 'supertest';
import * as OpenApiValidator from 'express-openapi-validator';
import { loadBundledSpec } from '../../src/compose';
import { responseValidation } from '../../src/http/response-validation';
import { errorHandler } from '../../src/http/error-handler';
import { createLogger } from '../../src/logger';

/**
 * Response validation (on in every test service): the real bundled spec, express-openapi-validator's request side
 * (which names the operation), and the real error handler; only the route bodies are written here, to break the
 * contract on purpose.
 */
function appAnswering(send: (res: express.Response) => void) {
  const spec = loadBundledSpec();
  const logged: string[] = [];
  const app = express();
  app.use(
    OpenApiValidator.middleware({
      apiSpec: structuredClone(spec) as never,
      // As the server's app (app.ts): the bundle is validated where it is built, not at every app start (here five
      // apps, each compiling the OpenAPI meta-schema: most of this file's CPU).
      validateApiSpec: false,
      validateRequests: true,
      validateResponses: false,
      validateSecurity: false,
    }),
  );
  app.use(responseValidation(spec as never));
  app.get('/x402/supported', (_req, res) => send(res));
  app.use(
    errorHandler({
      ...createLogger({ silent: true }),
      error: (msg: string, meta?: unknown) => void logged.push(`${msg} ${JSON.stringify(meta)}`),
    } as never),
  );
  return { app, logged };
}

const supported = {
  kinds: [{ x402Version: 2, scheme: 'exact', network: 'stellar:testnet' }],
  extensions: [],
  signers: {},
};

describe('response validation', () => {
  it('a body that matches the operation response schema is sent unchanged', async () => {
    const { app } = appAnswering((res) => res.status(200).json(supported));
    const res = await request(app).get('/x402/supported');
    expect([res.status, res.body]).toEqual([200, supported]);
  });

  it(
    'a body that breaks the response schema is answered 500 INTERNAL_ERROR in the envelope, and the cause is ' +
      'logged',
    async () => {
      const { app, logged } = appAnswering((res) => res.status(200).json({ kinds: 'not a list' }));
      const res = await request(app).get('/x402/supported');
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe('INTERNAL_ERROR');
      expect(JSON.stringify(res.body)).not.toContain('not a list');
      expect(logged.join('\n')).toMatch(/does not match the API contract: .*response\/kinds must be array/);
    },
  );

  it('an error of a shared ($ref) response, 429 here, is checked against the error envelope schema', async () => {
    const bad = appAnswering((res) => res.status(429).json({ message: 'slow down' }));
    expect((await request(bad.app).get('/x402/supported')).status).toBe(500);
    const good = appAnswering((res) =>
      res
        .status(429)
        .json({ ok: false, error: { code: 'RATE_LIMITED', message: 'slow down', details: [], requestId: 'req_1' } }),
    );
    const res = await request(good.app).get('/x402/supported');
    expect([res.status, res.body.error?.code]).toEqual([429, 'RATE_LIMITED']);
  });

  it('a status the operation does not declare is answered 500', async () => {
    const { app, logged } = appAnswering((res) => res.status(418).json({ teapot: true }));
    const res = await request(app).get('/x402/supported');
    expect([res.status, res.body.error?.code]).toEqual([500, 'INTERNAL_ERROR']);
    expect(logged.join('\n')).toContain("no schema defined for status code '418'");
  });
});
