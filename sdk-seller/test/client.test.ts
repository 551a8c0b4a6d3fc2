import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, ApiError, sep53Digest, signMessage } from '../src';
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
    const created = await createSellerClient({ baseUrl: server.baseUrl }).sellers.signUp({
      displayName: domain,
      domain,
      wallet,
    });
    return { ...created, wallet, client: createSellerClient({ baseUrl: server.baseUrl, apiKey: created.apiKey }) };
  }

  it('signs up, then manages its resources: create, get, update (new version), list, versions, delete', async () => {
    const s = await signUp('crud.example.com');
    expect(s.apiKey).toMatch(/^mk_/);
    await expect(s.client.sellers.get(s.seller.id)).resolves.toMatchObject({
      id: s.seller.id,
      domain: 'crud.example.com',
    });

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

  it(
    'every POST carries an Idempotency-Key, the same on every ' + 'retry; a lost response is replayed, not done twice',
    async () => {
      const wallet = Keypair.random();
      let dropped = false;
      // The first attempt reaches the server, which issues the challenge, but the response is lost on the way back.
      const rec = recordingFetch(async (req) => {
        if (req.method !== 'POST' || dropped) return undefined;
        dropped = true;
        await fetch(req);
        return new TypeError('socket hang up');
      });
      const client = createSellerClient({ baseUrl: server.baseUrl, fetch: rec.fetch, retry: { baseDelayMs: 1 } });
      const created = await client.sellers.challenge(wallet.publicKey());
      const posts = rec.calls.filter((c) => c.method === 'POST');
      expect(posts).toHaveLength(2);
      const key = posts[0].headers.get('idempotency-key');
      expect(key).toMatch(/^[0-9a-f-]{36}$/);
      expect(posts[1].headers.get('idempotency-key')).toBe(key);
      // The server stored that first response under the key: asking again with it replays the very same (random)
      // challenge.
      const again = await createSellerClient({ baseUrl: server.baseUrl }).sellers.challenge(wallet.publicKey(), {
        idempotencyKey: key!,
      });
      expect(again).toEqual(created);
    },
  );

  it(
    'a sign-up whose response was lost is not done twice, and the retry never returns the API key (409 naming ' +
      'the seller)',
    async () => {
      const wallet = Keypair.random();
      let firstSignUp: Response | undefined;
      const rec = recordingFetch(async (req) => {
        if (req.method !== 'POST' || !req.url.endsWith('/v1/sellers') || firstSignUp) return undefined;
        firstSignUp = await fetch(req);
        return new TypeError('socket hang up');
      });
      const client = createSellerClient({ baseUrl: server.baseUrl, fetch: rec.fetch, retry: { baseDelayMs: 1 } });
      const e = (await client.sellers
        .signUp({ displayName: 'Lost', domain: 'lost.example.com', wallet })
        .catch((x: unknown) => x)) as ApiError;
      const lost = (await firstSignUp!.json()) as { seller: { id: string }; apiKey: string };
      expect(e).toBeInstanceOf(ApiError);
      expect(e).toMatchObject({
        status: 409,
        code: 'IDEMPOTENCY_CONFLICT',
        details: [{ field: 'sellerId', message: lost.seller.id }],
      });
      expect(JSON.stringify(e) + e.message).not.toContain(lost.apiKey);
    },
  );

  it(
    'signs up with a secret seed or a WalletSigner; a signer for ' + 'another wallet is refused with INVALID_SIGNATURE',
    async () => {
      const client = createSellerClient({ baseUrl: server.baseUrl });
      const bySecret = Keypair.random();
      await expect(
        client.sellers.signUp({ displayName: 'Seed', domain: 'seed.example.com', wallet: bySecret.secret() }),
      ).resolves.toMatchObject({ seller: { walletAddress: bySecret.publicKey() } });
      const inWallet = Keypair.random();
      const signer = {
        publicKey: () => inWallet.publicKey(),
        signMessage: async (m: string) => inWallet.sign(sep53Digest(m)),
      };
      await expect(
        client.sellers.signUp({ displayName: 'Signer', domain: 'signer.example.com', wallet: signer }),
      ).resolves.toMatchObject({ seller: { walletAddress: inWallet.publicKey() } });
      const victim = Keypair.random();
      const impostor = {
        publicKey: () => victim.publicKey(),
        signMessage: (m: string) => signMessage(Keypair.random(), m),
      };
      await expect(
        client.sellers.signUp({ displayName: 'Squat', domain: 'squat.example.com', wallet: impostor }),
      ).rejects.toMatchObject({ status: 422, code: 'INVALID_SIGNATURE' });
    },
  );

  it(
    'an explicit Idempotency-Key replays the first response; the same key with another body is ' +
      'IDEMPOTENCY_CONFLICT',
    async () => {
      const client = createSellerClient({ baseUrl: server.baseUrl });
      const wallet = Keypair.random();
      const first = await client.sellers.challenge(wallet.publicKey(), { idempotencyKey: 'challenge-replay-1' });
      const second = await client.sellers.challenge(wallet.publicKey(), { idempotencyKey: 'challenge-replay-1' });
      expect(second).toEqual(first);
      const conflict = (await client.sellers
        .challenge(Keypair.random().publicKey(), { idempotencyKey: 'challenge-replay-1' })
        .catch((e: unknown) => e)) as ApiError;
      expect(conflict).toMatchObject({ status: 409, code: 'IDEMPOTENCY_CONFLICT' });
    },
  );

  it('validates a draft for the catalog and lists its (empty) payments', async () => {
    const s = await signUp('catalog.example.com');
    const { sellerId, ...resource } = draft(s.seller.id, s.wallet.publicKey(), 'catalog.example.com');
    const v = await s.client.catalog.validate({ sellerId, resource });
    expect(v).toMatchObject({ ok: true, errors: [] });
    const bad = await s.client.catalog.validate({
      sellerId,
      resource: { ...resource, url: 'https://someone-else.example.org/v0/forecast/{city}' },
    });
    expect(bad.ok).toBe(false);
    await expect(s.client.payments.list({ sellerId })).resolves.toEqual({ items: [], nextCursor: null });
    await expect(s.client.payments.iterate({ sellerId }).toArray()).resolves.toEqual([]);
  });
});
