/**
 * Bazaar v2 (issue #30), against the running service (the real app, embedded PostgreSQL, the local Stellar network
 * with real XDR and ed25519 signatures; local simulation):
 * - service metadata on the payment's `resource` (`serviceName`, `tags`, `iconUrl`) kept by the spec's rules, an
 *   invalid field dropped and never a refusal of the payment;
 * - MCP tools keyed by URL and tool name (`toolName` of @x402/extensions 2.27, or the older `tool`);
 * - no external `$ref` / `$id` of a seller's schema ever resolved (a server counts the requests it gets);
 * - the list filters `type`, `payTo`, `scheme`, `network`, `extensions` on catalog and observed resources, paging
 *   clamped for integers and refused for non-integers;
 * - the search operation `GET /x402/discovery/search` (`query`, filters, `cursor`, `partialResults`) naming the
 *   filters it cannot apply in `unappliedFilters`;
 * - without LOCAL_DEV_DOMAINS, nothing learned on `localhost` (with it: bazaar-local-dev.test.ts);
 * - `lastUpdated` as an ISO 8601 UTC timestamp.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { toStroops } from '../../src/domain/amount';
import { asTransactionXdr, paymentCase, type FacilitatorEnv } from '../facilitator/helpers';
import { catalog, draft, waitIndexed } from '../discovery/helpers';

let network: LocalNetwork;
let svc: TestService;
let env: FacilitatorEnv;
const usdc = () => network.assets.find((a) => a.code === 'USDC')!;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

beforeAll(async () => {
  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
  svc = await startTestService({
    runJobs: true,
    jobPollMs: 100,
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    facilitator: { channelAccounts: 2, pollMs: 25, confirmGraceMs: 10_000, ledgerSeconds: 0.1 },
  });
  env = { network, svc, usdc: usdc(), stop: async () => undefined };
});
afterAll(async () => {
  await svc?.stop();
  await network?.stop();
});

const verifyDomain = (s: SignedUpSeller) =>
  svc.db.query(`UPDATE sellers SET domain_verified_at = now() WHERE id = '${s.id}'`);

async function payableSeller(domain: string): Promise<SignedUpSeller> {
  const seller = await signUpSeller(svc.app, { domain });
  await network.fundAccount(seller.wallet.publicKey());
  await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
  return seller;
}

const httpExtension = (
  schema: Record<string, unknown> = { type: 'object', properties: { input: { type: 'object' } }, required: ['input'] },
) => ({
  info: { input: { type: 'http', method: 'GET' } },
  schema,
});

/**
 * A fresh wallet pays the seller for `resource.url` through /x402/settle with the seller's key (an uncataloged URL
 * needs it), with the given `extensions`. Returns the settle answer (the payment settles whatever the Bazaar does).
 */
async function pay(seller: SignedUpSeller, resource: Record<string, unknown>, extensions: Record<string, unknown>) {
  const payer = Keypair.random();
  await network.fundAccount(payer.publicKey());
  await network.faucet(payer.publicKey(), 'USDC', '1');
  const c = await paymentCase(env, payer, seller.wallet.publicKey(), '0.01');
  const accepted = {
    scheme: 'exact',
    network: 'stellar:testnet',
    asset: usdc().contractId,
    amount: toStroops('0.01').toString(),
    payTo: seller.wallet.publicKey(),
    maxTimeoutSeconds: 300,
    extra: { areFeesSponsored: true },
  };
  return request(svc.app)
    .post('/x402/settle')
    .set(bearer(seller.apiKey))
    .send({
      x402Version: 2,
      paymentPayload: {
        x402Version: 2,
        resource,
        accepted,
        payload: { transaction: asTransactionXdr(env, payer, c.entry) },
        extensions,
      },
      paymentRequirements: accepted,
    });
}

type Item = {
  resource: string;
  type: string;
  lastUpdated: string;
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
  accepts: Array<{ payTo: string }>;
  extensions?: Record<string, unknown>;
  metadata: Record<string, unknown>;
};
const list = async (query: Record<string, unknown> = {}) => {
  const res = await request(svc.app)
    .get('/x402/discovery/resources')
    .query({ limit: 100, ...query });
  expect(res.status).toBe(200);
  return res.body as { items: Item[]; pagination: { limit: number; offset: number; total: number } };
};

describe('Bazaar v2 service metadata: serviceName, tags and iconUrl', () => {
  it(
    'a payment whose resource carries invalid service metadata settles, and the Bazaar keeps only the fields and ' +
      'tags that pass the spec',
    async () => {
      const seller = await payableSeller('meta-shop.example');
      await verifyDomain(seller);
      const url = 'https://api.meta-shop.example/v1/tides';
      const tags = [
        'weather',
        'WEATHER',
        '',
        'x'.repeat(33),
        'tides',
        'ümlaut',
        42,
        'marine',
        'ports',
        'surf',
        'sixth',
      ];
      const res = await pay(
        seller,
        { url, description: 'Tides', serviceName: 'Meta Tides', tags, iconUrl: 'http://127.0.0.1/icon.png' },
        { bazaar: httpExtension() },
      );
      expect(res.body).toMatchObject({ success: true });
      const item = (await list()).items.find((i) => i.resource === url);
      expect(item).toMatchObject({ serviceName: 'Meta Tides', tags: ['weather', 'tides', 'marine', 'ports', 'surf'] });
      expect(item).not.toHaveProperty('iconUrl');

      // The other way round: a serviceName too long (33 characters) is dropped, a safe icon kept.
      const url2 = 'https://api.meta-shop.example/v1/waves';
      const res2 = await pay(
        seller,
        {
          url: url2,
          serviceName: 'S'.repeat(33),
          tags: 'not-a-list',
          iconUrl: 'https://cdn.meta-shop.example/icon.png',
        },
        { bazaar: httpExtension() },
      );
      expect(res2.body).toMatchObject({ success: true });
      const item2 = (await list()).items.find((i) => i.resource === url2);
      expect(item2).toMatchObject({ iconUrl: 'https://cdn.meta-shop.example/icon.png' });
      expect(item2).not.toHaveProperty('serviceName');
      expect(item2).not.toHaveProperty('tags');
      expect(item2?.lastUpdated).toMatch(ISO_UTC);
      expect(item2?.extensions).toEqual({ bazaar: httpExtension() });
    },
  );

  it.each([
    ['a loopback name', 'http://localhost/icon.png'],
    ['a full-width loopback name', 'http://ｌｏｃａｌｈｏｓｔ/icon.png'],
    ['a decimal IP', 'http://2130706433/icon.png'],
    ['a hex IP', 'http://0x7f000001/icon.png'],
    ['an IPv6 literal', 'http://[::1]/icon.png'],
    ['credentials', 'https://user:pw@cdn.example/icon.png'],
    ['a javascript: URL', 'javascript:alert(1)'],
  ])('an iconUrl with %s is dropped and the payment still settles', async (_what, iconUrl) => {
    const seller = await payableSeller(`icon-${Math.random().toString(36).slice(2, 8)}.example`);
    await verifyDomain(seller);
    const url = `https://${seller.domain}/v1/icon-check`;
    expect((await pay(seller, { url, iconUrl }, { bazaar: httpExtension() })).body).toMatchObject({ success: true });
    const item = (await list({ payTo: seller.wallet.publicKey() })).items[0];
    expect(item.resource).toBe(url);
    expect(item).not.toHaveProperty('iconUrl');
  });
});

describe('MCP tools in the Bazaar', () => {
  it(
    'two tools on one MCP server URL are two Bazaar items, keyed by URL and tool name (toolName of 2.27 or the ' +
      'older tool)',
    async () => {
      const seller = await payableSeller('mcp-shop.example');
      await verifyDomain(seller);
      const url = 'https://mcp.mcp-shop.example/mcp';
      const mcp = (input: Record<string, unknown>) => ({
        info: {
          input: { type: 'mcp', inputSchema: { type: 'object', properties: { city: { type: 'string' } } }, ...input },
        },
        schema: { type: 'object', required: ['input'] },
      });
      expect((await pay(seller, { url }, { bazaar: mcp({ toolName: 'forecast' }) })).body).toMatchObject({
        success: true,
      });
      expect((await pay(seller, { url }, { bazaar: mcp({ tool: 'tides' }) })).body).toMatchObject({ success: true });
      // Two different names for one tool are ambiguous: not learned, the payment settles.
      expect((await pay(seller, { url }, { bazaar: mcp({ toolName: 'a', tool: 'b' }) })).body).toMatchObject({
        success: true,
      });
      const items = (await list({ type: 'mcp', payTo: seller.wallet.publicKey() })).items;
      expect(items.map((i) => [i.resource, i.metadata.tool]).sort()).toEqual([
        [url, 'forecast'],
        [url, 'tides'],
      ]);
    },
  );
});

describe('no external schema reference is ever resolved', () => {
  let hits = 0;
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ type: 'object' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it.each([
    [
      'an external $ref',
      () => ({ type: 'object', properties: { input: { $ref: `${base}/input.json` } }, required: ['input'] }),
    ],
    [
      'an external $id',
      () => ({
        type: 'object',
        properties: { input: { $id: `${base}/input.json`, type: 'object' } },
        required: ['input'],
      }),
    ],
    [
      'an external $ref under an external $id',
      () => ({ $id: `${base}/root.json`, type: 'object', properties: { input: { $ref: 'input.json' } } }),
    ],
    [
      'an external root $id (refused as the stock 2.27 facilitator does)',
      () => ({ $id: `${base}/root.json`, type: 'object', required: ['input'] }),
    ],
  ])(
    'a bazaar schema with %s is never fetched, teaches the Bazaar nothing, and the payment settles',
    async (_what, schema) => {
      const seller = await payableSeller(`ref-${Math.random().toString(36).slice(2, 8)}.example`);
      await verifyDomain(seller);
      const url = `https://${seller.domain}/v1/refs`;
      const res = await pay(seller, { url }, { bazaar: httpExtension(schema()) });
      expect(res.body).toMatchObject({ success: true });
      expect((await list({ payTo: seller.wallet.publicKey() })).items).toEqual([]);
      expect(hits).toBe(0);
    },
  );
});

describe('the Bazaar list filters and paging', () => {
  let observedSeller: SignedUpSeller;
  let catalogSeller: SignedUpSeller;
  const observedUrl = 'https://api.filter-observed.example/v1/quotes';

  beforeAll(async () => {
    observedSeller = await payableSeller('filter-observed.example');
    await verifyDomain(observedSeller);
    catalogSeller = await signUpSeller(svc.app, { domain: 'filter-catalog.example', displayName: 'Quokka Data Co' });
    await verifyDomain(catalogSeller);
    const c = await catalog(svc.app, catalogSeller.apiKey, {
      sellerId: catalogSeller.id,
      resource: draft(catalogSeller, {
        name: 'Quokka quotes',
        extensions: { bazaar: { discoverable: true, tags: ['quokka', 'quotes'] } },
      }),
    });
    expect(c.status).toBe(201);
    await waitIndexed(svc.db);
    const res = await pay(
      observedSeller,
      { url: observedUrl },
      { bazaar: httpExtension(), 'payment-identifier': { info: { id: 'pay_0123456789abcdef' } } },
    );
    expect(res.body).toMatchObject({ success: true });
  });

  it(
    'payTo lists only the resources paid to that address, ' + 'cataloged and observed alike, with the filtered total',
    async () => {
      const observed = await list({ payTo: observedSeller.wallet.publicKey() });
      expect(observed.items.map((i) => i.resource)).toEqual([observedUrl]);
      expect(observed.pagination.total).toBe(1);
      const cataloged = await list({ payTo: catalogSeller.wallet.publicKey() });
      expect(cataloged.items).toHaveLength(1);
      expect(cataloged.items[0]).toMatchObject({
        resource: 'https://filter-catalog.example/v1/forecast/{city}',
        serviceName: 'Quokka Data Co',
        tags: ['quokka', 'quotes'],
      });
      expect(cataloged.items[0].lastUpdated).toMatch(ISO_UTC);
      const [[row]] = (await svc.db.query(
        `SELECT updated_at FROM resources WHERE seller_id = '${catalogSeller.id}'`,
      )) as [Array<{ updated_at: Date }>, unknown];
      expect(cataloged.items[0].lastUpdated).toBe(new Date(row.updated_at).toISOString());
    },
  );

  it(
    'scheme, network, type and extensions narrow the list; a ' + 'scheme or network we do not serve lists nothing',
    async () => {
      const payTo = observedSeller.wallet.publicKey();
      expect((await list({ payTo, scheme: 'exact' })).pagination.total).toBe(1);
      expect(await list({ payTo, scheme: 'upto' })).toMatchObject({ items: [], pagination: { total: 0 } });
      expect((await list({ payTo, network: 'stellar:testnet' })).pagination.total).toBe(1);
      expect(await list({ payTo, network: 'eip155:8453' })).toMatchObject({ items: [], pagination: { total: 0 } });
      expect((await list({ payTo, type: 'mcp' })).pagination.total).toBe(0);
      expect((await list({ payTo, extensions: 'payment-identifier' })).pagination.total).toBe(1);
      expect(
        (await list({ payTo: catalogSeller.wallet.publicKey(), extensions: 'payment-identifier' })).pagination.total,
      ).toBe(0);
      expect((await list({ payTo: catalogSeller.wallet.publicKey(), extensions: 'bazaar' })).pagination.total).toBe(1);
      // Every item of a filtered page matches the filter.
      const http = await list({ type: 'http', network: 'stellar:testnet' });
      expect(http.items.every((i) => i.type === 'http')).toBe(true);
    },
  );

  it(
    'integers out of range are clamped and a value that is not ' + 'an integer answers 400 naming the parameter',
    async () => {
      expect((await list({ limit: 500 })).pagination.limit).toBe(100);
      expect((await list({ limit: 0, offset: -3 })).pagination).toMatchObject({ limit: 1, offset: 0 });
      const all = await list({});
      const second = await list({ limit: 1, offset: 1 });
      expect(second.items[0]?.resource).toBe(all.items[1]?.resource);
      for (const [name, value] of [
        ['offset', 'abc'],
        ['limit', '1.5'],
        ['offset', ''],
      ] as const) {
        const res = await request(svc.app)
          .get('/x402/discovery/resources')
          .query({ [name]: value });
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('INVALID_REQUEST');
        expect(JSON.stringify(res.body.error)).toContain(name);
      }
    },
  );

  it('a malformed filter answers 400 INVALID_REQUEST', async () => {
    for (const q of [{ network: 'not a network' }, { scheme: 'ex act' }, { extensions: 'a b' }, { type: 'ftp' }]) {
      const res = await request(svc.app).get('/x402/discovery/resources').query(q);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
  });
});

describe('the Bazaar search', () => {
  let seller: SignedUpSeller;
  beforeAll(async () => {
    seller = await signUpSeller(svc.app, { domain: 'wallaby-search.example' });
    await verifyDomain(seller);
    for (const name of ['Wallaby sightings', 'Wallaby census']) {
      const c = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resource: draft(seller, { name, description: `${name}, paid per call` }),
      });
      expect(c.status).toBe(201);
    }
    await waitIndexed(svc.db);
  });

  const search = (query: Record<string, unknown>) => request(svc.app).get('/x402/discovery/search').query(query);

  it('finds cataloged resources in the Bazaar item shape and pages with its cursor', async () => {
    const first = await search({ query: 'wallaby', limit: 1 });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      x402Version: 2,
      partialResults: expect.any(Boolean),
      unappliedFilters: [],
      pagination: { limit: 1, cursor: expect.any(String) },
    });
    expect(first.body.resources).toHaveLength(1);
    expect(first.body.resources[0]).toMatchObject({
      type: 'http',
      x402Version: 2,
      accepts: [expect.objectContaining({ scheme: 'exact', payTo: seller.wallet.publicKey() })],
      metadata: expect.objectContaining({ hostVerified: true, untrusted: true }),
    });
    expect(first.body.resources[0].lastUpdated).toMatch(ISO_UTC);
    const second = await search({ query: 'wallaby', limit: 1, cursor: first.body.pagination.cursor });
    expect(second.status).toBe(200);
    expect(second.body.resources).toHaveLength(1);
    expect(second.body.resources[0].resource).not.toBe(first.body.resources[0].resource);
  });

  it('a well-formed filter the search cannot apply is named in unappliedFilters, never silently ignored', async () => {
    const other = Keypair.random().publicKey();
    const res = await search({ query: 'wallaby', payTo: other, extensions: 'payment-identifier' });
    expect(res.status).toBe(200);
    expect([...res.body.unappliedFilters].sort()).toEqual(['extensions', 'payTo']);
    // Not narrowed by them: the results are there, and say whom they pay.
    expect(res.body.resources.length).toBeGreaterThan(0);
    expect(res.body.resources.every((r: Item) => r.accepts[0].payTo !== other)).toBe(true);
  });

  it('filters the search can apply narrow the results and are not named', async () => {
    const mcp = await search({
      query: 'wallaby',
      type: 'mcp',
      extensions: 'bazaar',
      network: 'stellar:testnet',
      scheme: 'exact',
    });
    expect(mcp.status).toBe(200);
    expect(mcp.body).toMatchObject({ resources: [], unappliedFilters: [] });
    const upto = await search({ query: 'wallaby', scheme: 'upto' });
    expect(upto.body).toMatchObject({ resources: [], unappliedFilters: [], pagination: { cursor: null } });
    const bazaar = await search({ query: 'wallaby', extensions: 'bazaar' });
    expect(bazaar.body.resources.length).toBe(2);
  });

  it('a search without query, or with a cursor this service did not issue, answers 400', async () => {
    expect((await search({})).status).toBe(400);
    const bad = await search({ query: 'wallaby', cursor: 'bm90LWEtY3Vyc29y' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_REQUEST');
  });
});

describe('local development domains off', () => {
  it(
    'without LOCAL_DEV_DOMAINS, a paid localhost URL settles and teaches the Bazaar nothing (nobody can prove ' +
      'localhost)',
    async () => {
      // The positive case (the switch on) is server/test/x402/bazaar-local-dev.test.ts: one service per test process.
      const seller = await payableSeller('x402-e2e-deployed.example');
      const res = await pay(
        seller,
        { url: 'http://localhost:4021/protected', description: 'x402 e2e' },
        { bazaar: httpExtension() },
      );
      expect(res.body).toMatchObject({ success: true });
      expect((await list({ payTo: seller.wallet.publicKey() })).items).toEqual([]);
    },
  );
});
