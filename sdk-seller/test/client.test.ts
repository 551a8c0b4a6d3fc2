import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, ApiError } from '../src';
import { startServer, recordingFetch, type RunningServer } from '../../test/support/sdk-server';
import { DEFAULT_USDC_ISSUER } from '../../server/src/config';

function draft(sellerId: string, wallet: string, domain: string, n = 0) {
  return {
    sellerId,
    type: 'http' as const,
    name: `Forecast ${n}`,
    description: 'Hourly forecast for a city, paid per call',
    url: `https://${domain}/v${n}/forecast/{city}`,
    routeTemplate: `/v${n}/forecast/{city}`,
    network: 'stellar:testnet' as const,
    payTo: wallet,
    assetCode: 'USDC',
    assetIssuer: DEFAULT_USDC_ISSUER['stellar:testnet'],
    amount: '0.01',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    outputSchema: { type: 'object', properties: { temperatureC: { type: 'number' } } },
  };
}

describe('seller client against the real server', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  async function signUp(domain: string) {
    const wallet = Keypair.random();
    const created = await createSellerClient({ baseUrl: server.baseUrl }).sellers.create({ displayName: domain, walletAddress: wallet.publicKey(), domain });
    return { ...created, wallet, client: createSellerClient({ baseUrl: server.baseUrl, apiKey: created.apiKey }) };
  }

  it('signs up, then manages its resources: create, get, update (new version), list, versions, delete', async () => {
    const s = await signUp('crud.example.com');
    expect(s.apiKey).toMatch(/^mk_/);
    await expect(s.client.sellers.get(s.seller.id)).resolves.toMatchObject({ id: s.seller.id, domain: 'crud.example.com' });

    const r = await s.client.resources.create(draft(s.seller.id, s.wallet.publicKey(), 'crud.example.com'));
    expect(r).toMatchObject({ sellerId: s.seller.id, amount: expect.stringMatching(/^0\.01/) });
    const updated = await s.client.resources.update(r.id, { amount: '0.02' });
    expect(updated.amount).toMatch(/^0\.02/);
    const versions = await s.client.resources.iterateVersions(r.id).toArray();
    expect(versions.length).toBe(2);
    const mine = await s.client.sellers.iterateResources(s.seller.id).toArray();
    expect(mine.map((x) => x.id)).toEqual([r.id]);
    await s.client.resources.delete(r.id);
    await expect(s.client.resources.get(r.id)).rejects.toMatchObject({ status: 404 });
  });

  it("another seller's resource: 403 FORBIDDEN as an ApiError that does not contain the key", async () => {
    const a = await signUp('alice.example.com');
    const b = await signUp('bob.example.com');
    const r = await a.client.resources.create(draft(a.seller.id, a.wallet.publicKey(), 'alice.example.com'));
    const e = (await b.client.resources.update(r.id, { amount: '5' }).catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e).toMatchObject({ status: 403, code: 'FORBIDDEN', requestId: expect.any(String) });
    expect(JSON.stringify(e) + e.stack + e.message).not.toContain(b.apiKey);
  });

  it('every POST carries an Idempotency-Key, the same on every retry; a lost response is replayed, not done twice', async () => {
    const wallet = Keypair.random();
    let dropped = false;
    // The first attempt reaches the server, which creates the seller, but the response is lost on the way back.
    const rec = recordingFetch(async (req) => {
      if (req.method !== 'POST' || dropped) return undefined;
      dropped = true;
      await fetch(req);
      return new TypeError('socket hang up');
    });
    const client = createSellerClient({ baseUrl: server.baseUrl, fetch: rec.fetch, retry: { baseDelayMs: 1 } });
    const created = await client.sellers.create({ displayName: 'Once', walletAddress: wallet.publicKey(), domain: 'once.example.com' });
    const posts = rec.calls.filter((c) => c.method === 'POST');
    expect(posts).toHaveLength(2);
    const key = posts[0].headers.get('idempotency-key');
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(posts[1].headers.get('idempotency-key')).toBe(key);
    // The server stored that first response under the key: asking again with it replays the very same seller.
    const again = await createSellerClient({ baseUrl: server.baseUrl })
      .sellers.create({ displayName: 'Once', walletAddress: wallet.publicKey(), domain: 'once.example.com' }, { idempotencyKey: key! })
      .catch((e: unknown) => e);
    expect(again).toEqual(created);
  });

  it('an explicit Idempotency-Key replays the first response; the same key with another body is IDEMPOTENCY_CONFLICT', async () => {
    const client = createSellerClient({ baseUrl: server.baseUrl });
    const wallet = Keypair.random();
    const body = { displayName: 'Replay', walletAddress: wallet.publicKey(), domain: 'replay.example.com' };
    const first = await client.sellers.create(body, { idempotencyKey: 'signup-replay-1' });
    const second = await client.sellers.create(body, { idempotencyKey: 'signup-replay-1' });
    expect(second).toEqual(first);
    const conflict = (await client.sellers.create({ ...body, displayName: 'Other' }, { idempotencyKey: 'signup-replay-1' }).catch((e: unknown) => e)) as ApiError;
    expect(conflict).toMatchObject({ status: 409, code: 'IDEMPOTENCY_CONFLICT' });
  });

  it('validates a draft for the catalog and lists its (empty) payments', async () => {
    const s = await signUp('catalog.example.com');
    const { sellerId, ...resource } = draft(s.seller.id, s.wallet.publicKey(), 'catalog.example.com');
    const v = await s.client.catalog.validate({ sellerId, resource });
    expect(v).toMatchObject({ ok: true, errors: [] });
    const bad = await s.client.catalog.validate({ sellerId, resource: { ...resource, url: 'https://someone-else.example.org/v0/forecast/{city}' } });
    expect(bad.ok).toBe(false);
    await expect(s.client.payments.list({ sellerId })).resolves.toEqual({ items: [], nextCursor: null });
    await expect(s.client.payments.iterate({ sellerId }).toArray()).resolves.toEqual([]);
  });
});
