import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { DEFAULT_USDC_ISSUER } from '../../src/config';
import { catalog, draft, LONG, waitFor, waitIndexed } from './helpers';

const AQUA_ISSUER = Keypair.random().publicKey();
let svc: TestService;
let seller: SignedUpSeller;
let verified: SignedUpSeller;
let second: SignedUpSeller;

beforeAll(async () => {
  svc = await startTestService({
    runJobs: true,
    jobPollMs: 100,
    networks: testNetworks({
      assets: [
        { code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:testnet'] },
        { code: 'AQUA', issuer: AQUA_ISSUER },
      ],
    }),
  });
  seller = await signUpSeller(svc.app);
  verified = await signUpSeller(svc.app);
  second = await signUpSeller(svc.app);
  await svc.db.query(`UPDATE sellers SET domain_verified_at = now() WHERE id = '${verified.id}'`);
});
afterAll(async () => {
  await svc.stop();
});

/** Catalogs a resource with neutral defaults: every ranking input is equal unless the overrides change it. */
async function put(s: SignedUpSeller, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await catalog(svc.app, s.apiKey, {
    sellerId: s.id,
    resource: draft(s, { description: LONG, ...overrides }),
  });
  if (res.status !== 201) throw new Error(`catalog failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.resourceId;
}

const search = (query: Record<string, string | number>) => request(svc.app).get('/v1/discovery/search').query(query);
const list = (query: Record<string, string | number>) => request(svc.app).get('/v1/discovery/resources').query(query);
const ids = (res: request.Response) => (res.body.resources as Array<{ id: string }>).map((r) => r.id);

describe('GET /v1/discovery/resources filters', () => {
  const made: Record<string, string> = {};
  beforeAll(async () => {
    made.cheap = await put(seller, { name: 'Filter cheap quokka', amount: '9' });
    made.dear = await put(seller, { name: 'Filter dear quokka', amount: '10' });
    made.aqua = await put(seller, {
      name: 'Filter aqua quokka',
      assetCode: 'AQUA',
      assetIssuer: AQUA_ISSUER,
      amount: '0.5',
    });
    made.mcp = await put(seller, {
      name: 'Filter mcp quokka',
      type: 'mcp',
      url: `https://${seller.domain}/mcp`,
      routeTemplate: '/mcp',
      extensions: { mcp: { toolName: 'quokka' } },
    });
    made.pubnet = await put(verified, {
      name: 'Filter pubnet quokka',
      network: 'stellar:pubnet',
      assetIssuer: DEFAULT_USDC_ISSUER['stellar:pubnet'],
    });
    made.noext = await put(second, { name: 'Filter plain quokka', extensions: {} });
    await waitIndexed(svc.db);
  });

  it(
    'lists indexed resources newest first with the listing ' + 'fields only, and partialResults false once indexed',
    async () => {
      const res = await list({ limit: 100 });
      expect(res.status).toBe(200);
      expect(res.body.partialResults).toBe(false);
      expect(res.body.nextCursor).toBeNull();
      const all = ids(res);
      expect(all).toEqual([...all].sort().reverse());
      expect(all).toEqual(expect.arrayContaining(Object.values(made)));
      const item = res.body.resources.find((r: { id: string }) => r.id === made.cheap);
      expect(Object.keys(item).sort()).toEqual([
        'amount',
        'assetCode',
        'assetIssuer',
        'description',
        'hostVerified',
        'id',
        'name',
        'network',
        'payTo',
        'routeTemplate',
        'sellerId',
        'status',
        'trust',
        'type',
        'url',
      ]);
      expect(item).toMatchObject({ amount: '9', status: 'active', sellerId: seller.id, hostVerified: false });
    },
  );

  it('network', async () => {
    expect(ids(await list({ network: 'stellar:pubnet' }))).toEqual([made.pubnet]);
  });
  it('asset', async () => {
    expect(ids(await list({ asset: 'AQUA' }))).toEqual([made.aqua]);
  });
  it('type', async () => {
    expect(ids(await list({ type: 'mcp' }))).toEqual([made.mcp]);
  });
  it('sellerId', async () => {
    expect(ids(await list({ sellerId: second.id }))).toEqual([made.noext]);
  });
  it('minPrice and maxPrice compare decimals, not text ("10" > "9.5")', async () => {
    expect(ids(await list({ minPrice: '9.5' }))).toEqual([made.dear]);
    expect(ids(await list({ minPrice: '8.9999999', maxPrice: '9.0000000' }))).toEqual([made.cheap]);
    expect(ids(await list({ maxPrice: '0.5', asset: 'AQUA' }))).toEqual([made.aqua]);
  });
  it('a zero price bound is applied, not ignored (maxPrice 0 lists nothing, minPrice 0 everything)', async () => {
    expect(ids(await list({ maxPrice: '0' }))).toEqual([]);
    expect(ids(await search({ q: 'quokka', maxPrice: '0' }))).toEqual([]);
    expect(ids(await list({ minPrice: '0', sellerId: second.id }))).toEqual([made.noext]);
  });
  it('extension', async () => {
    expect(ids(await list({ extension: 'mcp' }))).toEqual([made.mcp]);
    const bazaar = ids(await list({ extension: 'bazaar', limit: 100 }));
    expect(bazaar).toContain(made.cheap);
    expect(bazaar).not.toContain(made.noext);
    expect(bazaar).not.toContain(made.mcp);
  });
  it('search takes the same filters', async () => {
    expect(ids(await search({ q: 'quokka', minPrice: '9.5' }))).toEqual([made.dear]);
    expect(ids(await search({ q: 'quokka', extension: 'mcp' }))).toEqual([made.mcp]);
    expect(ids(await search({ q: 'quokka', network: 'stellar:pubnet' }))).toEqual([made.pubnet]);
  });
  it('a bad cursor is a 400 INVALID_REQUEST', async () => {
    const res = await list({ cursor: 'bm9wZQ' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });
});

describe('GET /v1/discovery/search ranking (pg-impact-v5): each signal decides one pair', () => {
  async function pair(token: string, better: () => Promise<string>, worse: () => Promise<string>) {
    const w = await worse();
    const b = await better();
    return { token, better: b, worse: w };
  }
  const pairs: Record<string, { token: string; better: string; worse: string }> = {};

  beforeAll(async () => {
    pairs.text = await pair(
      'axolotl',
      () => put(seller, { name: 'Axolotl finder api' }),
      () => put(seller, { name: 'Amphibian finder api', description: `${LONG} Covers the axolotl.` }),
    );
    const bazaar = { info: { input: { type: 'http', method: 'GET' } }, schema: { type: 'object' } };
    pairs.quality = await pair(
      'bandicoot',
      () => put(seller, { name: 'Bandicoot data api', extensions: { bazaar } }),
      () => put(seller, { name: 'Bandicoot data api' }),
    );
    const described = {
      type: 'object',
      required: ['city'],
      properties: { city: { type: 'string', description: 'City' } },
    };
    pairs.schema = await pair(
      'capybara',
      () => put(seller, { name: 'Capybara data api', inputSchema: described }),
      () => put(seller, { name: 'Capybara data api', inputSchema: { type: 'object', properties: { city: {} } } }),
    );
    pairs.verified = await pair(
      'dugong',
      () => put(verified, { name: 'Dugong data api' }),
      () => put(seller, { name: 'Dugong data api' }),
    );
    pairs.settlement = await pair(
      'echidna',
      () => put(seller, { name: 'Echidna data api' }),
      () => put(seller, { name: 'Echidna data api' }),
    );
    pairs.type = await pair(
      'fossa',
      () => put(seller, { name: 'Fossa data api' }),
      () =>
        put(seller, {
          name: 'Fossa data api',
          type: 'mcp',
          url: `https://${seller.domain}/tools`,
          routeTemplate: '/tools',
          extensions: { mcp: { toolName: 'lookup_one' } },
        }),
    );
    pairs.network = await pair(
      'gharial',
      () =>
        put(verified, {
          name: 'Gharial data api',
          network: 'stellar:pubnet',
          assetIssuer: DEFAULT_USDC_ISSUER['stellar:pubnet'],
        }),
      () => put(verified, { name: 'Gharial data api' }),
    );
    pairs.asset = await pair(
      'hoatzin',
      () => put(seller, { name: 'Hoatzin data api' }),
      () => put(seller, { name: 'Hoatzin data api', assetCode: 'AQUA', assetIssuer: AQUA_ISSUER }),
    );
    pairs.price = await pair(
      'ibex',
      () => put(seller, { name: 'Ibex data api', amount: '0.01' }),
      () => put(seller, { name: 'Ibex data api', amount: '0.02' }),
    );
    await waitIndexed(svc.db);

    // Recent settlement success: one settled payment for the better, one failed for the worse.
    for (const [resourceId, status] of [
      [pairs.settlement.better, 'settled'],
      [pairs.settlement.worse, 'settlement_failed'],
    ] as const) {
      const [[r]] = (await svc.db.query(
        `SELECT current_version_id AS v FROM resources WHERE id = '${resourceId}'`,
      )) as [Array<{ v: string }>, unknown];
      await svc.db.query(
        `INSERT INTO payment_attempts (id, resource_id, version_id, seller_id, payment_hash, network, payer,
          nonce, asset_code, asset_issuer,
           amount, pay_to, status, expires_at_ledger, authorization_xdr)
         VALUES (:id, :resourceId, :v, :sellerId, 'h', 'stellar:testnet', :payer, :nonce, 'USDC',
           :issuer, 0.01, :payTo, :status, 100, 'AAAA')`,
        {
          replacements: {
            id: `pay_${resourceId.slice(4)}`,
            resourceId,
            v: r.v,
            sellerId: seller.id,
            payer: Keypair.random().publicKey(),
            nonce: resourceId,
            issuer: DEFAULT_USDC_ISSUER['stellar:testnet'],
            payTo: seller.wallet.publicKey(),
            status,
          },
        },
      );
    }
    await svc.jobs.enqueue('search-sync-worker');
    await waitFor(async () => {
      const [rows] = (await svc.db.query(
        `SELECT settlement_success FROM search_documents WHERE resource_id IN ('${pairs.settlement.better}', ` +
          `'${pairs.settlement.worse}') AND settlement_success IS NOT NULL`,
      )) as [unknown[], unknown];
      return rows.length === 2;
    });
  });

  it.each(['text', 'quality', 'schema', 'verified', 'settlement', 'type', 'network', 'asset', 'price'])(
    '%s decides its pair',
    async (signal) => {
      const p = pairs[signal];
      const res = await search({ q: p.token });
      expect(res.status).toBe(200);
      expect(res.body.ranking).toEqual({ strategy: 'pg-impact-v5' });
      expect(ids(res)).toEqual([p.better, p.worse]);
      expect(res.body.partialResults).toBe(false);
    },
  );

  it('a query with no match is an empty page, not an error', async () => {
    const res = await search({ q: 'zzyzx-nothing-matches' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      resources: [],
      ranking: { strategy: 'pg-impact-v5' },
      partialResults: false,
      nextCursor: null,
    });
  });
});

describe('search paging', () => {
  it('pages of ranked results neither duplicate nor skip', async () => {
    const made = new Set<string>();
    for (let i = 0; i < 23; i++) {
      made.add(
        await put(i % 2 ? seller : second, {
          name: `Jackal service ${i}`,
          amount: `0.0${(i % 5) + 1}`,
          description: i % 3 ? LONG : `${LONG} jackal jackal`,
        }),
      );
    }
    await waitIndexed(svc.db);
    const full = ids(await search({ q: 'jackal', limit: 100 }));
    expect(full).toHaveLength(23);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await search({ q: 'jackal', limit: 5, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      paged.push(...ids(res));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(full);
    expect(new Set(paged)).toEqual(made);
  });

  it('listing pages neither duplicate nor skip', async () => {
    const full = ids(await list({ limit: 100 }));
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await list({ limit: 7, ...(cursor ? { cursor } : {}) });
      paged.push(...ids(res));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(full);
  });
});

describe('the index follows the catalog', () => {
  it('plain resource creates, updates and deletes are indexed too; a deleted resource leaves the index', async () => {
    const created = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { name: 'Kinkajou plain api' }));
    expect(created.status).toBe(201);
    await waitIndexed(svc.db);
    expect(ids(await search({ q: 'kinkajou' }))).toEqual([created.body.id]);
    await request(svc.app)
      .patch(`/v1/resources/${created.body.id}`)
      .set(bearer(seller.apiKey))
      .send({ name: 'Lemur plain api' })
      .expect(200);
    await waitIndexed(svc.db);
    expect(ids(await search({ q: 'kinkajou' }))).toEqual([]);
    expect(ids(await search({ q: 'lemur' }))).toEqual([created.body.id]);
    await request(svc.app).delete(`/v1/resources/${created.body.id}`).set(bearer(seller.apiKey)).expect(200);
    await waitFor(async () => ids(await search({ q: 'lemur' })).length === 0);
    const [rows] = await svc.db.query(`SELECT 1 FROM search_documents WHERE resource_id = '${created.body.id}'`);
    expect(rows).toEqual([]);
  });

  it(
    'a resource whose stored payTo is an undeclared foreign wallet (it reached the catalog without the API ' +
      'checks) is kept out of discovery',
    async () => {
      // The resources API now refuses a foreign payTo (400), so the row is changed underneath it, as an import or an
      // older version of the service could have left it; the indexing worker re-checks the rules.
      const created = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { name: 'Margay foreign payto' }));
      expect(created.status).toBe(201);
      await waitIndexed(svc.db);
      expect(ids(await search({ q: 'margay' }))).toEqual([created.body.id]);
      await svc.db.query(
        `UPDATE resources SET pay_to = '${Keypair.random().publicKey()}' WHERE id = '${created.body.id}'`,
      );
      await svc.jobs.enqueue('resource-indexing-worker', { resourceId: created.body.id });
      await waitFor(async () => ids(await search({ q: 'margay' })).length === 0);
      const [rows] = await svc.db.query(
        `SELECT discoverable, rejection_reasons->0->>'reason' AS reason FROM search_documents WHERE resource_id = ` +
          `'${created.body.id}'`,
      );
      expect(rows).toEqual([{ discoverable: false, reason: 'forged_seller_metadata' }]);
    },
  );

  it('indexing is idempotent: running the worker again for an indexed event changes nothing', async () => {
    const id = await put(seller, { name: 'Numbat idempotent api' });
    await waitIndexed(svc.db);
    const [before] = await svc.db.query(
      `SELECT document::text, version_id FROM search_documents WHERE resource_id = '${id}'`,
    );
    await svc.jobs.enqueue('resource-indexing-worker', { resourceId: id });
    await new Promise((r) => setTimeout(r, 500));
    const [after] = await svc.db.query(
      `SELECT document::text, version_id FROM search_documents WHERE resource_id = '${id}'`,
    );
    expect(after).toEqual(before);
    expect(ids(await search({ q: 'numbat' }))).toEqual([id]);
  });
});
