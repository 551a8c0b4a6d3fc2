import request from 'supertest';
import { startTestService, testNetworks, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, signUpSeller } from '../support/fixtures';
import { createService } from '../../src/compose';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

describe('operational endpoints', () => {
  it('GET /health reports the database as ok with its latency', async () => {
    const res = await request(svc.app).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', checks: { database: { status: 'ok' }, jobs: { status: 'ok' } } });
    expect(typeof res.body.checks.database.latencyMs).toBe('number');
    expect(typeof res.body.uptimeSeconds).toBe('number');
  });

  it('GET /version reports the service version and the contract version of the spec', async () => {
    const res = await request(svc.app).get('/version');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ version: '0.0.0-test', contractVersion: '0.1.0', node: process.version });
  });

  it('GET /v1/networks lists both networks with their assets, contract ids and evidence labels', async () => {
    const res = await request(svc.app).get('/v1/networks');
    expect(res.status).toBe(200);
    expect(res.body.items.map((n: { network: string }) => n.network)).toEqual(['stellar:testnet', 'stellar:pubnet']);
    expect(res.body.items[0]).toMatchObject({
      evidence: 'local_simulation',
      settlementEnabled: true,
      assets: [{ code: 'USDC', contractId: expect.stringMatching(/^C/) }],
    });
    expect(res.body.items[1]).toMatchObject({ evidence: 'mainnet_verification', settlementEnabled: false });
  });

  it(
    'GET /metrics needs the operator key and shows request counts, latency by route template, auth failures and ' +
      'uptime labelled with the environment',
    async () => {
      await request(svc.app).get('/v1/resources');
      await request(svc.app).get('/v1/resources/res_01JD6Y2B7C4D5E6F7G8H9J0K1M');
      await request(svc.app).get('/v1/payments');
      expect((await request(svc.app).get('/metrics')).status).toBe(401);
      const seller = await signUpSeller(svc.app);
      expect((await request(svc.app).get('/metrics').set(bearer(seller.apiKey))).status).toBe(403);
      const res = await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/text\/plain/);
      expect(res.text).toMatch(
        /api_requests_total\{method="GET",route="\/v1\/resources",status="200",environment="test"\} \d+/,
      );
      expect(res.text).toMatch(
        /api_request_duration_seconds_bucket\{[^}]*route="\/v1\/resources\/\{id\}"[^}]*status="404"/,
      );
      expect(res.text).toMatch(
        /api_errors_total\{route="\/v1\/resources\/\{id\}",code="RESOURCE_NOT_FOUND",environment="test"\} 1/,
      );
      expect(res.text).toMatch(/api_auth_failures_total\{reason="UNAUTHORIZED",environment="test"\} \d+/);
      expect(res.text).toMatch(/service_uptime_seconds\{environment="test"\} [\d.]+/);
      expect(res.text).not.toContain('res_01JD6Y2B7C4D5E6F7G8H9J0K1M');
    },
  );

  it('GET /docs serves the Redoc page and its bundle from local files', async () => {
    const page = await request(svc.app).get('/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('/docs/redoc.standalone.js');
    expect(page.text).not.toMatch(/https?:\/\/(cdn|fonts)\./);
    const js = await request(svc.app).get('/docs/redoc.standalone.js');
    expect(js.status).toBe(200);
    expect(js.text.length).toBeGreaterThan(100_000);
    const spec = await request(svc.app).get('/docs/openapi.json');
    expect(Object.keys(spec.body.paths).length).toBeGreaterThanOrEqual(20);
  });
});

describe('errors leave in the one envelope', () => {
  it('an unknown route answers 404 NOT_FOUND', async () => {
    const res = await request(svc.app).get('/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', requestId: expect.any(String) } });
  });

  it('malformed JSON answers 400 INVALID_REQUEST', async () => {
    const res = await request(svc.app)
      .post('/v1/sellers')
      .set('Content-Type', 'application/json')
      .send('{"displayName": ');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
  });

  it('a body over the size limit answers 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await request(svc.app)
      .post('/v1/sellers')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ displayName: 'x'.repeat(300 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('an unsupported method on a known path answers 405 METHOD_NOT_ALLOWED', async () => {
    const res = await request(svc.app).put('/v1/resources');
    expect(res.status).toBe(405);
    expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });
});

describe('rate limiting', () => {
  it(
    'past the limit, requests answer 429 RATE_LIMITED with Retry-After, counted on /metrics, and limits are per ' +
      'key',
    async () => {
      const limited = await startTestService({ rateLimit: { points: 3, windowSeconds: 60 } });
      try {
        const statuses: number[] = [];
        let last: request.Response | undefined;
        for (let i = 0; i < 5; i++) {
          last = await request(limited.app).get('/v1/networks');
          statuses.push(last.status);
        }
        expect(statuses).toEqual([200, 200, 200, 429, 429]);
        expect(last!.body.error.code).toBe('RATE_LIMITED');
        expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
        // the operator key has its own bucket
        expect((await request(limited.app).get('/v1/networks').set(bearer(OPERATOR_KEY))).status).toBe(200);
        const metrics = await request(limited.app).get('/metrics').set(bearer(OPERATOR_KEY));
        expect(metrics.text).toMatch(/api_rate_limited_total\{route="\/v1\/networks",environment="test"\} 2/);
      } finally {
        await limited.stop();
      }
    },
  );

  it('two server instances on one database share the same counters', async () => {
    const a = await startTestService({ rateLimit: { points: 2, windowSeconds: 60 } });
    const b = await createService({
      databaseUrl: a.databaseUrl,
      environment: 'test',
      version: 'x',
      commit: null,
      networks: testNetworks(),
      operatorApiKey: OPERATOR_KEY,
      rateLimit: { points: 2, windowSeconds: 60 },
      bodyLimitBytes: 1024 * 256,
      responseValidation: false,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    try {
      expect((await request(a.app).get('/v1/networks')).status).toBe(200);
      expect((await request(b.app).get('/v1/networks')).status).toBe(200);
      expect((await request(a.app).get('/v1/networks')).status).toBe(429);
    } finally {
      await b.close();
      await a.stop();
    }
  });
});
