import util from 'node:util';
import request from 'supertest';
import { signUpSeller, resourceInput, bearer, type SignedUpSeller } from '../../server/test/support/fixtures';
import { createBuyerClient, ApiError } from '../src';
import { startServer, recordingFetch, type RunningServer } from '../../test/support/sdk-server';

describe('buyer client against the real server', () => {
  let server: RunningServer;
  let seller: SignedUpSeller;
  const created: string[] = [];

  beforeAll(async () => {
    server = await startServer();
    seller = await signUpSeller(server.service.app);
    for (let i = 0; i < 5; i++) {
      const res = await request(server.service.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(
          resourceInput(seller, {
            name: `Forecast ${i}`,
            routeTemplate: `/v1/forecast${i}/{city}`,
            url: `https://${seller.domain}/v1/forecast${i}/{city}`,
          }),
        );
      expect(res.status).toBe(201);
      created.push(res.body.id);
    }
  });
  afterAll(() => server.close());

  it('reads a resource with its payment requirements', async () => {
    const buyer = createBuyerClient({ baseUrl: server.baseUrl });
    const r = await buyer.resources.get(created[0]);
    expect(r.id).toBe(created[0]);
    expect(r.paymentRequirements).toMatchObject({
      scheme: 'exact',
      network: 'stellar:testnet',
      amount: expect.any(String),
      payTo: seller.wallet.publicKey(),
    });
    expect(r.paymentRequirements.asset.contractId).toMatch(/^C[A-Z2-7]{55}$/);
  });

  it(
    'when the resource does not exist, throws one ApiError with ' + 'status, contract code, message and request id',
    async () => {
      const buyer = createBuyerClient({ baseUrl: server.baseUrl });
      const err = await buyer.resources.get('res_01JD6Z8V3K9Q2W7X4M5N6P8R0T').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toBeInstanceOf(Error);
      const e = err as ApiError;
      expect(e.status).toBe(404);
      expect(e.code).toBe('RESOURCE_NOT_FOUND');
      expect(e.message).toMatch(/res_01JD6Z8V3K9Q2W7X4M5N6P8R0T/);
      expect(e.requestId).toMatch(/\S+/);
      expect(e.details).toEqual([]);
      expect(e.method).toBe('GET');
      expect(e.url).toBe(`${server.baseUrl}/v1/resources/res_01JD6Z8V3K9Q2W7X4M5N6P8R0T`);
    },
  );

  it('when the request is invalid, the ApiError lists the field-level details', async () => {
    const buyer = createBuyerClient({ baseUrl: server.baseUrl });
    const e = (await buyer.resources.list({ limit: 1000 }).catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(400);
    expect(e.code).toBe('INVALID_REQUEST');
    expect(e.details.length).toBeGreaterThan(0);
    expect(e.details[0]).toMatchObject({ message: expect.any(String) });
  });

  it('an ApiError never contains the API key: not in message, stack, JSON, inspection or its fields', async () => {
    const apiKey = 'mk_this_is_a_secret_key_that_must_never_leak_0123456789';
    const buyer = createBuyerClient({ baseUrl: server.baseUrl, apiKey });
    const e = (await buyer.resources.get(created[0]).catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(401);
    expect(e.code).toBe('UNAUTHORIZED');
    const everything = [
      e.message,
      e.stack,
      JSON.stringify(e),
      util.inspect(e, { depth: 10, showHidden: true }),
      String(e),
      JSON.stringify(Object.entries(e)),
    ].join('\n');
    expect(everything).not.toContain(apiKey);
    expect(everything).not.toContain('this_is_a_secret');
  });

  it('iterates every page of a list with for await, fetching lazily', async () => {
    const rec = recordingFetch();
    const buyer = createBuyerClient({ baseUrl: server.baseUrl, fetch: rec.fetch });
    const ids: string[] = [];
    for await (const r of buyer.resources.iterate({ sellerId: seller.id, limit: 2 })) ids.push(r.id);
    expect(ids.sort()).toEqual([...created].sort());
    expect(rec.calls.filter((c) => c.url.includes('/v1/resources?')).length).toBe(3);
    expect(rec.calls[1].url).toMatch(/cursor=/);

    rec.calls.length = 0;
    const firstThree = await buyer.sellers.iterateResources(seller.id, { limit: 2 }).toArray(3);
    expect(firstThree).toHaveLength(3);
    expect(rec.calls).toHaveLength(2);

    const versions = await buyer.resources.iterateVersions(created[0]).toArray();
    expect(versions.length).toBeGreaterThanOrEqual(1);
  });

  it('a network error is retried with backoff and then succeeds', async () => {
    const rec = recordingFetch((_req, attempt) =>
      attempt === 1 ? new TypeError('fetch failed: ECONNRESET') : undefined,
    );
    const buyer = createBuyerClient({ baseUrl: server.baseUrl, fetch: rec.fetch, retry: { baseDelayMs: 10 } });
    await expect(buyer.resources.get(created[1])).resolves.toMatchObject({ id: created[1] });
    expect(rec.calls).toHaveLength(2);
  });

  it('when the network stays down, the ApiError says NETWORK_ERROR with status 0 after the retries', async () => {
    const rec = recordingFetch(() => new TypeError('fetch failed'));
    const buyer = createBuyerClient({
      baseUrl: server.baseUrl,
      fetch: rec.fetch,
      retry: { maxRetries: 2, baseDelayMs: 1 },
    });
    const e = (await buyer.resources.get(created[1]).catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ status: 0, code: 'NETWORK_ERROR' });
    expect(rec.calls).toHaveLength(3);
  });

  it('502 and 503 are retried; 500 and 4xx are not', async () => {
    const statuses = [503, 502];
    const rec = recordingFetch(() => {
      const s = statuses.shift();
      return s
        ? new Response(
            JSON.stringify({ ok: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'down', requestId: 'req_x' } }),
            { status: s },
          )
        : undefined;
    });
    const buyer = createBuyerClient({ baseUrl: server.baseUrl, fetch: rec.fetch, retry: { baseDelayMs: 1 } });
    await expect(buyer.resources.get(created[2])).resolves.toMatchObject({ id: created[2] });
    expect(rec.calls.map((c) => c.status)).toEqual([503, 502, 200]);

    const rec500 = recordingFetch(
      () =>
        new Response(
          JSON.stringify({ ok: false, error: { code: 'INTERNAL_ERROR', message: 'boom', requestId: 'req_y' } }),
          { status: 500 },
        ),
    );
    const b500 = createBuyerClient({ baseUrl: server.baseUrl, fetch: rec500.fetch, retry: { baseDelayMs: 1 } });
    await expect(b500.resources.get(created[2])).rejects.toMatchObject({
      status: 500,
      code: 'INTERNAL_ERROR',
      requestId: 'req_y',
    });
    expect(rec500.calls).toHaveLength(1);
  });

  it('lists the networks with their RPC URLs and asset contracts', async () => {
    const buyer = createBuyerClient({ baseUrl: server.baseUrl });
    const { items } = await buyer.networks.list();
    expect(items.map((n) => n.network).sort()).toEqual(['stellar:pubnet', 'stellar:testnet']);
  });
});

describe('buyer client: 429 rate limiting', () => {
  let server: RunningServer;
  let resourceId: string;
  beforeAll(async () => {
    server = await startServer({ rateLimit: { points: 1, windowSeconds: 1 } });
    const seller = await signUpSeller(server.service.app);
    // Spend a fresh window for set-up calls under the seller's own key (counted apart from the buyer's IP).
    const res = await request(server.service.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller));
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    resourceId = res.body.id;
  });
  afterAll(() => server.close());

  it('when rate limited, waits as long as Retry-After says and then succeeds', async () => {
    const rec = recordingFetch();
    const buyer = createBuyerClient({
      baseUrl: server.baseUrl,
      fetch: rec.fetch,
      retry: { maxRetries: 3, baseDelayMs: 1 },
    });
    await buyer.resources.get(resourceId);
    const started = Date.now();
    await expect(buyer.resources.get(resourceId)).resolves.toMatchObject({ id: resourceId });
    const statuses = rec.calls.map((c) => c.status);
    expect(statuses).toContain(429);
    expect(statuses[statuses.length - 1]).toBe(200);
    const retryAfter = Number(rec.calls.find((c) => c.status === 429)?.retryAfter);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // The retry never came earlier than Retry-After said.
    expect(Date.now() - started).toBeGreaterThanOrEqual(retryAfter * 1000 - 50);
  });

  it('without retries, the 429 surfaces as ApiError RATE_LIMITED with retryAfterSeconds', async () => {
    const buyer = createBuyerClient({ baseUrl: server.baseUrl, retry: { maxRetries: 0 } });
    await new Promise((r) => setTimeout(r, 1100));
    await buyer.resources.get(resourceId);
    const e = (await buyer.resources.get(resourceId).catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(e.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });
});
