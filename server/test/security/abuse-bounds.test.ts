// Abuse bounds (issue #19): every unit of work pays the limiter, malformed media types are 4xx in the envelope,
// sign-up challenges are limited per address, and reads cannot take the connections verify and settle need.
import express from 'express';
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { admission } from '../../src/http/admission';
import { errorHandler } from '../../src/http/error-handler';
import { createMetrics } from '../../src/metrics/registry';
import { createLogger } from '../../src/logger';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { RequestValidator } = require('express-openapi-validator/dist/middlewares/openapi.request.validator') as {
  RequestValidator: { prototype: { buildMiddleware: (...args: unknown[]) => unknown } };
};

const search = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'search_resources', arguments: { q: 'weather' } },
});
const batch = (n: number) => Array.from({ length: n }, (_, i) => search(i + 1));
const mcp = (app: TestService['app'], body: unknown) =>
  request(app)
    .post('/mcp')
    .set('Accept', 'application/json, text/event-stream')
    .send(body as object);

describe('a 500 on a bad content type (defect 4)', () => {
  let svc: TestService;
  let seller: SignedUpSeller;
  beforeAll(async () => {
    svc = await startTestService();
    seller = await signUpSeller(svc.app);
  });
  afterAll(async () => {
    await svc.stop();
  });

  const posts = () =>
    [
      ['catalog (seller key)', '/v1/resources', seller.apiKey],
      ['settle (seller key)', '/v1/settle', seller.apiKey],
      ['verify (anonymous)', '/v1/verify', null],
      ['x402 settle (seller key)', '/x402/settle', seller.apiKey],
      ['create key (seller key)', `/v1/sellers/${seller.id}/keys`, seller.apiKey],
      ['conformance run (operator)', '/v1/conformance/runs', OPERATOR_KEY],
      ['mcp (anonymous)', '/mcp', null],
    ] as const;

  it(
    'Content-Type: application/json; charset=latin1 answers 415 UNSUPPORTED_MEDIA_TYPE in the envelope on every ' +
      'POST',
    async () => {
      for (const [what, path, key] of posts()) {
        let req = request(svc.app).post(path).set('Content-Type', 'application/json; charset=latin1');
        if (key) req = req.set(bearer(key));
        const res = await req.send(JSON.stringify(resourceInput(seller)));
        expect([what, res.status, res.body.ok, res.body.error?.code, typeof res.body.error?.requestId]).toEqual([
          what,
          415,
          false,
          'UNSUPPORTED_MEDIA_TYPE',
          'string',
        ]);
      }
      const [[{ n }]] = (await svc.db.query(`SELECT count(*)::int AS n FROM resources`)) as [
        Array<{ n: number }>,
        unknown,
      ];
      expect(n).toBe(0);
    },
  );

  it('an unknown Content-Encoding answers 415 in the envelope, not 500', async () => {
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'br-unknown')
      .send('{}');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it(
    'a body in another media type (text/plain, form) on a JSON ' + 'operation answers 415 UNSUPPORTED_MEDIA_TYPE',
    async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
        const res = await request(svc.app)
          .post('/v1/resources')
          .set(bearer(seller.apiKey))
          .set('Content-Type', type)
          .send('name=x');
        expect([type, res.status, res.body.error?.code]).toEqual([type, 415, 'UNSUPPORTED_MEDIA_TYPE']);
      }
    },
  );

  it(
    'ever new Content-Type headers (a stranger varying the parameters on a route with a body, or sending any header ' +
      'to a route without one) do not make the service compile and keep a validator for each, and answer as before',
    async () => {
      // express-openapi-validator compiles a validator per method, route and Content-Type header it sees and keeps it
      // (~40 ms of CPU each on this machine); src/http/validator-content-type.ts bounds the headers it sees
      const proto = RequestValidator.prototype;
      const original = proto.buildMiddleware;
      let builds = 0;
      proto.buildMiddleware = function counted(...args: unknown[]) {
        builds += 1;
        return original.apply(this, args);
      };
      try {
        const answers = new Set<string>();
        for (let i = 0; i < 12; i += 1) {
          const verify = await request(svc.app)
            .post('/v1/verify')
            .set('Content-Type', `application/json; n=${i}`)
            .send('{}');
          const networks = await request(svc.app).get('/v1/networks').set('Content-Type', `text/x-${i}`);
          answers.add(`${verify.status} ${verify.body.error?.code} ${networks.status}`);
        }
        expect({ answers: [...answers], atMostOneBuildPerRoute: builds <= 2 }).toEqual({
          answers: ['400 INVALID_PAYMENT_PAYLOAD 200'],
          atMostOneBuildPerRoute: true,
        });
      } finally {
        proto.buildMiddleware = original;
      }
    },
  );
});

describe('MCP batches outrun the rate limit (defect 3)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ rateLimit: { points: 15, windowSeconds: 600 } });
  });
  afterAll(async () => {
    await svc.stop();
  });

  it('a batch of 100 search calls is refused (400 INVALID_REQUEST naming the bound), and no tool runs', async () => {
    const before = await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY));
    const res = await mcp(svc.app, batch(100));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
    expect(res.body.error.message).toContain('1 to 10');
    const after = await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY));
    const calls = (text: string) =>
      [...text.matchAll(/^mcp_tool_calls_total\{[^}]*tool="search_resources"[^}]*\} (\d+)/gm)].reduce(
        (a, m) => a + Number(m[1]),
        0,
      );
    expect(calls(after.text)).toBe(calls(before.text));
  });

  it(
    'each JSON-RPC message of a batch pays one rate-limit point: a 10-message batch takes 10 of 15, the next ' +
      'batch is 429',
    async () => {
      const first = await mcp(svc.app, batch(10));
      expect(first.status).toBe(200);
      expect(first.body).toHaveLength(10);
      // the 100-message batch above paid 1 (refused before any tool ran), this one 10: 4 are left
      expect(Number(first.headers['ratelimit-remaining'])).toBe(4);
      const second = await mcp(svc.app, batch(10));
      expect(second.status).toBe(429);
      expect(second.body.error.code).toBe('RATE_LIMITED');
      expect(second.headers['retry-after']).toBeDefined();
    },
  );
});

describe('sign-up challenges are rate limited per address', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ challengeLimit: { perClient: 6, perWallet: 3 } });
  });
  afterAll(async () => {
    await svc.stop();
  });
  const challenge = (wallet: string) => request(svc.app).post('/v1/sellers/challenges').send({ walletAddress: wallet });
  const rows = async () =>
    (
      (await svc.db.query(`SELECT count(*)::int AS n FROM seller_wallet_challenges`)) as [Array<{ n: number }>, unknown]
    )[0][0].n;

  it('a fourth challenge for one wallet within the hour is 429 RATE_LIMITED and stores no row', async () => {
    const wallet = Keypair.random().publicKey();
    for (let i = 0; i < 3; i++) expect((await challenge(wallet)).status).toBe(201);
    const fourth = await challenge(wallet);
    expect(fourth.status).toBe(429);
    expect(fourth.body.error.code).toBe('RATE_LIMITED');
    expect(Number(fourth.headers['retry-after'])).toBeGreaterThan(0);
    expect(await rows()).toBe(3);
  });

  it('one client address asking for challenges for ever new wallets is stopped at its hourly bound', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await challenge(Keypair.random().publicKey())).status);
    // 3 + 1 (refused, still counted) above; 6 per client address
    expect(statuses).toEqual([201, 201, 429, 429, 429]);
    expect(await rows()).toBe(5);
  });

  it('a malformed wallet address is 400 and does not count against the wallet bound', async () => {
    const res = await challenge('not-a-wallet');
    expect(res.status).toBe(400);
  });
});

describe('reads cannot starve settlement: admission per route class', () => {
  it(
    'with the read/write bound full and its queue full, verify is still admitted at once; one more read is shed ' +
      'with 503 in the envelope',
    async () => {
      const metrics = createMetrics('test');
      const gates: Array<() => void> = [];
      const app = express();
      app.use((_req, res, next) => {
        res.locals.requestId = 'req_test';
        next();
      });
      // pool 3, one connection reserved for payments: reads and writes share 2 slots, 1 may wait
      app.use(admission({ poolMax: 3, reservedForPayments: 1, maxWaiting: 1, metrics: metrics.abuse }));
      app.get('/v1/discovery/search', (_req, res) => {
        gates.push(() => res.json({ ok: true }));
      });
      app.post('/v1/verify', (_req, res) => {
        res.json({ verified: true });
      });
      app.use(errorHandler(createLogger({ silent: true })));
      const server = app.listen(0);
      const agent = request(server);
      const gauge = async (name: string, cls: string) => {
        const text = await metrics.registry.getSingleMetricAsString(name);
        return Number(new RegExp(`class="${cls}"[^}]*\\} (\\d+)`).exec(text)?.[1]);
      };
      try {
        const reads = [0, 1, 2].map(() => agent.get('/v1/discovery/search').then((r) => r));
        for (let i = 0; i < 200 && (await gauge('api_admission_waiting', 'reads')) < 1; i++)
          await new Promise((r) => setTimeout(r, 10));
        expect(await gauge('api_admission_in_flight', 'reads')).toBe(2);
        expect(await gauge('api_admission_waiting', 'reads')).toBe(1);
        const verify = await agent.post('/v1/verify').send({});
        expect(verify.status).toBe(200);
        const shed = await agent.get('/v1/discovery/search');
        expect(shed.status).toBe(503);
        expect(shed.body).toMatchObject({ ok: false, error: { code: 'SERVICE_UNAVAILABLE', requestId: 'req_test' } });
        expect(shed.headers['retry-after']).toBe('1');
        // the two admitted reads finish; the waiting one is admitted next and finishes too
        while (gates.length < 2) await new Promise((r) => setTimeout(r, 10));
        gates.splice(0, 2).forEach((open) => open());
        while (gates.length < 1) await new Promise((r) => setTimeout(r, 10));
        gates.splice(0).forEach((open) => open());
        expect((await Promise.all(reads)).map((r) => r.status)).toEqual([200, 200, 200]);
        expect(await gauge('api_admission_in_flight', 'reads')).toBe(0);
        expect(await gauge('api_admission_shed_total', 'reads')).toBe(1);
      } finally {
        server.close();
      }
    },
  );
});
