import crypto from 'node:crypto';
import request from 'supertest';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';

let svc: TestService;
let seller: SignedUpSeller;
let other: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService();
  seller = await signUpSeller(svc.app);
  other = await signUpSeller(svc.app);
});
afterAll(async () => {
  await svc.stop();
});

const random = () => crypto.randomBytes(6).toString('hex');

/** Every series (name + labels) in the exposition, without values. */
async function series(): Promise<Set<string>> {
  const text = await svc.metrics.registry.metrics();
  return new Set(
    text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.slice(0, l.lastIndexOf(' '))),
  );
}

describe('unbounded metric labels from anonymous input', () => {
  const hostile = () => [
    request(svc.app).get(`/v1/${random()}/${random()}`),
    request(svc.app).get(`/${random()}`),
    request(svc.app).post(`/v1/resources/${random()}/${random()}`).send({}),
    request(svc.app)
      .get('/v1/discovery/resources')
      .query({ network: `stellar:${random()}` }),
    request(svc.app)
      .get('/v1/discovery/search')
      .query({ q: 'weather', network: `evil:${random()}` }),
    request(svc.app).get(`/v1/resources/res_${random()}`),
    request(svc.app).get(`/docs/${random()}`),
  ];

  it('200 requests with distinct random paths and networks add no new series to /metrics', async () => {
    await Promise.all(hostile());
    const before = await series();
    for (let i = 0; i < 30; i += 1) await Promise.all(hostile());
    const after = await series();
    // A garbage collection of a kind the process had not run before adds its series here: V8 has four kinds, none
    // of them chosen by a caller, so those are not input-driven series.
    const runtimeGc = /^nodejs_gc_duration_seconds_\w+\{.*kind="(minor|major|incremental|weakcb)"\}$/;
    const added = [...after].filter((s) => !before.has(s) && !runtimeGc.test(s));
    expect(added).toEqual([]);
    const text = await svc.metrics.registry.metrics();
    expect(text).toContain('route="unmatched"');
    expect(text).toContain('route="/v1/discovery/search"');
    expect(text).not.toMatch(/route="\/v1\/[0-9a-f]{12}/);
    expect(text).not.toMatch(/evil:|stellar:[0-9a-f]{12}/);
  });
});

describe('deep JSON bodies', () => {
  it('10,000 nested arrays answer 400 INVALID_REQUEST, not a 500 stack overflow', async () => {
    const res = await request(svc.app)
      .post('/v1/discovery/validate')
      .set('Content-Type', 'application/json')
      .send(`${'['.repeat(10_000)}${']'.repeat(10_000)}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });

  it('a deep object inside an otherwise valid body answers 400 INVALID_REQUEST', async () => {
    const deep = `${'{"a":'.repeat(5_000)}"x"${'}'.repeat(5_000)}`;
    const body = JSON.stringify({
      sellerId: seller.id,
      resource: { ...resourceInput(seller), sellerId: undefined, inputSchema: 'DEEP' },
    }).replace('"DEEP"', deep);
    const res = await request(svc.app)
      .post('/v1/discovery/validate')
      .set('Content-Type', 'application/json')
      .send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });

  it('brackets inside strings do not count as nesting', async () => {
    const res = await request(svc.app)
      .post('/v1/discovery/validate')
      .send({
        sellerId: seller.id,
        resource: { ...resourceInput(seller, { description: `${'['.repeat(500)} "\\" {{{` }), sellerId: undefined },
      });
    expect(res.status).toBe(200);
  });
});

describe('search cursors', () => {
  const cursor = (s: unknown) =>
    Buffer.from(JSON.stringify({ v: 'pg-fts-weighted-v1', s, i: 'res_01JD6Z8V3K9Q2W7X4M5N6P8R0T' })).toString(
      'base64url',
    );
  it.each([['1e+-'], ['...'], ['-'], ['e'], ['1.2.3'], ['NaN'], ['Infinity'], ['9'.repeat(400)]])(
    'a cursor whose score is %s answers 400 INVALID_REQUEST',
    async (score) => {
      const res = await request(svc.app)
        .get('/v1/discovery/search')
        .query({ q: 'weather', cursor: cursor(score) });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    },
  );
  it('a cursor with a well-formed score is accepted', async () => {
    const res = await request(svc.app)
      .get('/v1/discovery/search')
      .query({ q: 'weather', cursor: cursor('0.4512') });
    expect(res.status).toBe(200);
  });
});

describe('soft-deleted resources', () => {
  it('are 404 RESOURCE_NOT_FOUND for anyone but their seller and the operator, versions too', async () => {
    const created = await request(svc.app).post('/v1/resources').set(bearer(seller.apiKey)).send(resourceInput(seller));
    expect(created.status).toBe(201);
    const id = (created.body.resource ?? created.body).id as string;
    await svc.db.query(`UPDATE resources SET status = 'deleted' WHERE id = '${id}'`);
    for (const path of [`/v1/resources/${id}`, `/v1/resources/${id}/versions`]) {
      const anonymous = await request(svc.app).get(path);
      expect(anonymous.status).toBe(404);
      expect(anonymous.body.error.code).toBe('RESOURCE_NOT_FOUND');
      const stranger = await request(svc.app).get(path).set(bearer(other.apiKey));
      expect(stranger.status).toBe(404);
      expect(stranger.body.error.code).toBe('RESOURCE_NOT_FOUND');
      expect((await request(svc.app).get(path).set(bearer(seller.apiKey))).status).toBe(200);
      expect((await request(svc.app).get(path).set(bearer(OPERATOR_KEY))).status).toBe(200);
    }
  });
});

describe('hostile ids on single-object reads answer 404 with the area code', () => {
  const SHAPES: Array<[string, string]> = [
    ['a prefix with a word', 'res_doesnotexist'],
    ['one character', 'x'],
    ['SQL', encodeURIComponent("'; DROP TABLE resources; --")],
    ['an emoji', encodeURIComponent('💥')],
    ['a right-to-left override', encodeURIComponent('\u202Eabc')],
    ['128 characters', 'a'.repeat(128)],
    ['an encoded path', encodeURIComponent('../../etc/passwd')],
    ['a space', '%20'],
    ['a percent sign', '%25'],
    ['braces', encodeURIComponent('{id}')],
    ['another prefix, valid ULID', 'sel_01JD6Y2B7C4D5E6F7G8H9J0K1M'],
    ['a JSON object', encodeURIComponent('{"$ne":null}')],
  ];
  const READS: Array<[string, (id: string) => string, string]> = [
    ['GET /v1/resources/{id}', (id) => `/v1/resources/${id}`, 'RESOURCE_NOT_FOUND'],
    ['GET /v1/resources/{id}/versions', (id) => `/v1/resources/${id}/versions`, 'RESOURCE_NOT_FOUND'],
    ['GET /v1/sellers/{sellerId}', (id) => `/v1/sellers/${id}`, 'NOT_FOUND'],
    ['GET /v1/sellers/{sellerId}/resources', (id) => `/v1/sellers/${id}/resources`, 'NOT_FOUND'],
    ['GET /v1/payments/{paymentId}', (id) => `/v1/payments/${id}`, 'NOT_FOUND'],
    ['GET /v1/settlements/{transactionHash}', (id) => `/v1/settlements/${id}`, 'NOT_FOUND'],
    ['GET /v1/receipts/{receiptId}', (id) => `/v1/receipts/${id}`, 'NOT_FOUND'],
  ];
  const cases = READS.flatMap(([read, path, code]) =>
    SHAPES.map(([shape, id]) => [read, shape, path(id), code] as const),
  );

  it.each(cases)('%s with %s answers 404', async (_read, _shape, path, code) => {
    const res = await request(svc.app).get(path).set(bearer(OPERATOR_KEY));
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe(code);
  });

  it.each(READS)('%s with an id over 128 characters answers 400 INVALID_REQUEST', async (_read, path) => {
    const res = await request(svc.app)
      .get(path('a'.repeat(129)))
      .set(bearer(OPERATOR_KEY));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });
});

describe('hostile search queries', () => {
  it.each([
    ['an unterminated quote', '"weather forecast'],
    ['boolean operators', 'weather & !forecast | (city'],
    ['tsquery syntax', 'fore:* <-> cast <2> x'],
    ['websearch operators', '-weather OR "hourly forecast" -'],
    ['only punctuation', '\'"()!&|<->:*\\'],
    ['unicode', 'ñandú 天気 🌦️ \u202E'],
    ['SQL', "'; DROP TABLE search_documents; --"],
    ['LIKE wildcards', '%_%'],
    ['200 characters', 'w'.repeat(200)],
  ])('a query with %s answers 200', async (_name, q) => {
    const res = await request(svc.app).get('/v1/discovery/search').query({ q });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body.resources)).toBe(true);
  });

  it('a 10 kB query answers 400 INVALID_REQUEST naming q (q is bounded to 200 characters)', async () => {
    const res = await request(svc.app)
      .get('/v1/discovery/search')
      .query({ q: 'weather '.repeat(1280) });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(JSON.stringify(res.body.error.details)).toContain('q');
  });
});
