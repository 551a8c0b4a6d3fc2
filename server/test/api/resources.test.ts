import request from 'supertest';
import { Asset, Keypair, Networks } from '@stellar/stellar-sdk';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { DEFAULT_USDC_ISSUER } from '../../src/config';
import { newId } from '../../src/domain/ids';

let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService();
  seller = await signUpSeller(svc.app);
});
afterAll(async () => {
  await svc.stop();
});

async function createResource(s: SignedUpSeller, overrides: Record<string, unknown> = {}) {
  const res = await request(svc.app).post('/v1/resources').set(bearer(s.apiKey)).send(resourceInput(s, overrides));
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

describe('POST /v1/resources', () => {
  it(
    'creates a resource at version 1 with its payment ' + 'requirements, seller trust and settlement metadata',
    async () => {
      const res = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { amount: '0.0100000' }));
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        sellerId: seller.id,
        type: 'http',
        amount: '0.01',
        status: 'active',
        version: 1,
        paymentRequirements: {
          scheme: 'exact',
          network: 'stellar:testnet',
          amount: '0.01',
          payTo: seller.wallet.publicKey(),
          asset: {
            code: 'USDC',
            issuer: DEFAULT_USDC_ISSUER['stellar:testnet'],
            contractId: expect.stringMatching(/^C[A-Z2-7]{55}$/),
          },
        },
        sellerTrust: { sellerId: seller.id, domainVerified: false, trusted: false, domainVerifiedAt: null },
        settlementStats: { settledCount: 0, lastSettledAt: null, successRate: null },
      });
      expect(res.body.id).toMatch(/^res_/);
      expect(res.body.versionId).toMatch(/^ver_/);
      const [rows] = await svc.db.query(
        `SELECT amount::text AS amount, version, status FROM resources WHERE id = '${res.body.id}'`,
      );
      expect(rows).toEqual([{ amount: '0.0100000', version: 1, status: 'active' }]);
      const [events] = await svc.db.query(`SELECT kind FROM catalog_events WHERE resource_id = '${res.body.id}'`);
      expect(events).toEqual([{ kind: 'created' }]);
    },
  );

  it('the testnet USDC contract id is the one the Stellar SDK derives', async () => {
    const body = await createResource(seller);
    expect(body.paymentRequirements.asset.contractId).toBe(
      new Asset('USDC', DEFAULT_USDC_ISSUER['stellar:testnet']).contractId(Networks.TESTNET),
    );
  });

  it('when a seller creates a resource for another seller, it fails with FORBIDDEN', async () => {
    const other = await signUpSeller(svc.app);
    const res = await request(svc.app).post('/v1/resources').set(bearer(other.apiKey)).send(resourceInput(seller));
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });

  it('without an API key, it fails with UNAUTHORIZED', async () => {
    const res = await request(svc.app).post('/v1/resources').send(resourceInput(seller));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('the operator may create a resource for any seller', async () => {
    const res = await request(svc.app).post('/v1/resources').set(bearer(OPERATOR_KEY)).send(resourceInput(seller));
    expect(res.status).toBe(201);
  });

  it.each([
    ['/v1/../admin', 'traversal'],
    ['/v1//forecast', 'an empty segment'],
    ['https://evil.example/x', 'a scheme'],
    ['/v1/%2e%2e/x', 'percent-encoding'],
    ['/v1/{city', 'an unbalanced placeholder'],
    ['/v1/{city}/{city}', 'a duplicate placeholder'],
  ])('when the route template is %s (%s), it fails with ROUTE_TEMPLATE_INVALID', async (routeTemplate) => {
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { routeTemplate }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('ROUTE_TEMPLATE_INVALID');
    expect(res.body.error.details[0].field).toBe('routeTemplate');
  });

  it('when the URL path does not fit the route template, it fails with ROUTE_TEMPLATE_INVALID', async () => {
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { url: `https://${seller.domain}/other/path` }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('ROUTE_TEMPLATE_INVALID');
  });

  it('when the network is not supported, it fails with UNSUPPORTED_NETWORK', async () => {
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { network: 'stellar:futurenet' }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('UNSUPPORTED_NETWORK');
  });

  it('when the asset is not configured on the network, it fails with UNSUPPORTED_ASSET', async () => {
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { assetCode: 'EURC', assetIssuer: Keypair.random().publicKey() }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('UNSUPPORTED_ASSET');
  });

  it(
    'when the resource is on pubnet and the seller domain is ' + 'unverified, it fails with SELLER_DOMAIN_UNVERIFIED',
    async () => {
      const res = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { network: 'stellar:pubnet', assetIssuer: DEFAULT_USDC_ISSUER['stellar:pubnet'] }));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('SELLER_DOMAIN_UNVERIFIED');
    },
  );

  it(
    'when the input schema is not a valid JSON Schema or references an external document, it fails with ' +
      'CATALOG_VALIDATION_FAILED',
    async () => {
      for (const inputSchema of [{ type: 'not-a-type' }, { $ref: 'https://evil.example/schema.json' }]) {
        const res = await request(svc.app)
          .post('/v1/resources')
          .set(bearer(seller.apiKey))
          .send(resourceInput(seller, { inputSchema }));
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('CATALOG_VALIDATION_FAILED');
        expect(res.body.error.details[0].field).toBe('inputSchema');
      }
    },
  );

  it('when payTo is not a valid Stellar address, it fails with CATALOG_VALIDATION_FAILED', async () => {
    const good = Keypair.random().publicKey();
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { payTo: good.slice(0, 55) + (good[55] === 'A' ? 'B' : 'A') }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('CATALOG_VALIDATION_FAILED');
  });

  it('when the amount has more than 7 decimals or is zero, the request is refused', async () => {
    for (const amount of ['0.00000001', '0']) {
      const res = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { amount }));
      expect(res.status).toBe(400);
      expect(['INVALID_REQUEST', 'CATALOG_VALIDATION_FAILED']).toContain(res.body.error.code);
    }
  });
});

describe('GET /v1/resources/:id', () => {
  it('when the id is unknown, it fails with RESOURCE_NOT_FOUND', async () => {
    const res = await request(svc.app).get(`/v1/resources/${newId('resource')}`);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('RESOURCE_NOT_FOUND');
  });
});

describe('GET /v1/resources', () => {
  it('filters by seller, network, asset and type, and pages without duplicates or gaps', async () => {
    const s = await signUpSeller(svc.app);
    const created: string[] = [];
    for (let i = 0; i < 5; i++)
      created.push((await createResource(s, { name: `Tool ${i}`, type: i % 2 ? 'mcp' : 'http', extensions: {} })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: request.Response = await request(svc.app)
        .get('/v1/resources')
        .query({ sellerId: s.id, limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((r: { id: string }) => r.id));
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...created].reverse());
    const mcp = await request(svc.app).get('/v1/resources').query({ sellerId: s.id, type: 'mcp' });
    expect(mcp.body.items.map((r: { id: string }) => r.id)).toEqual([created[3], created[1]]);
    const filtered = await request(svc.app)
      .get('/v1/resources')
      .query({ sellerId: s.id, network: 'stellar:testnet', asset: 'USDC' });
    expect(filtered.body.items).toHaveLength(5);
    const none = await request(svc.app).get('/v1/resources').query({ sellerId: s.id, asset: 'EURC' });
    expect(none.body).toEqual({ items: [], nextCursor: null });
    const sellerList = await request(svc.app).get(`/v1/sellers/${s.id}/resources`).query({ limit: 100 });
    expect(sellerList.body.items).toHaveLength(5);
  });

  it('when the limit is above 100 or the cursor is forged, it fails with INVALID_REQUEST', async () => {
    expect((await request(svc.app).get('/v1/resources').query({ limit: 101 })).body.error.code).toBe('INVALID_REQUEST');
    expect((await request(svc.app).get('/v1/resources').query({ cursor: 'bm90LWEtY3Vyc29y' })).body.error.code).toBe(
      'INVALID_REQUEST',
    );
  });
});

describe('PATCH /v1/resources/:id', () => {
  it('stores a new version on a price change and keeps the history', async () => {
    const created = await createResource(seller);
    const res = await request(svc.app)
      .patch(`/v1/resources/${created.id}`)
      .set(bearer(seller.apiKey))
      .send({ amount: '0.02' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.id, amount: '0.02', version: 2 });
    expect(res.body.versionId).not.toBe(created.versionId);
    const versions = await request(svc.app).get(`/v1/resources/${created.id}/versions`);
    expect(versions.status).toBe(200);
    expect(versions.body.items.map((v: { version: number; amount: string }) => [v.version, v.amount])).toEqual([
      [2, '0.02'],
      [1, '0.01'],
    ]);
    expect(versions.body.items[1].id).toBe(created.versionId);
  });

  it('when nothing changes, no new version is stored', async () => {
    const created = await createResource(seller);
    const res = await request(svc.app)
      .patch(`/v1/resources/${created.id}`)
      .set(bearer(seller.apiKey))
      .send({ amount: '0.0100', name: created.name });
    expect(res.status).toBe(200);
    expect(res.body.version).toBe(1);
  });

  it('when another seller patches it, it fails with FORBIDDEN and nothing changes', async () => {
    const created = await createResource(seller);
    const other = await signUpSeller(svc.app);
    const res = await request(svc.app)
      .patch(`/v1/resources/${created.id}`)
      .set(bearer(other.apiKey))
      .send({ amount: '9' });
    expect(res.status).toBe(403);
    expect((await request(svc.app).get(`/v1/resources/${created.id}`)).body.amount).toBe('0.01');
  });

  it('when the change breaks a rule, it fails with that rule’s code and stores nothing', async () => {
    const created = await createResource(seller);
    const res = await request(svc.app)
      .patch(`/v1/resources/${created.id}`)
      .set(bearer(seller.apiKey))
      .send({ routeTemplate: '/a/../b' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('ROUTE_TEMPLATE_INVALID');
    expect((await request(svc.app).get(`/v1/resources/${created.id}/versions`)).body.items).toHaveLength(1);
  });

  it('concurrent changes each get their own version number', async () => {
    const created = await createResource(seller);
    const results = await Promise.all(
      ['0.03', '0.04', '0.05'].map((amount) =>
        request(svc.app).patch(`/v1/resources/${created.id}`).set(bearer(seller.apiKey)).send({ amount }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    const versions = await request(svc.app).get(`/v1/resources/${created.id}/versions`);
    const numbers = versions.body.items.map((v: { version: number }) => v.version);
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(numbers).toHaveLength(1 + ok.length);
  });
});

describe('DELETE /v1/resources/:id', () => {
  it('hard-deletes a resource that has no payments', async () => {
    const created = await createResource(seller);
    const res = await request(svc.app).delete(`/v1/resources/${created.id}`).set(bearer(seller.apiKey));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: created.id, status: 'deleted', mode: 'hard' });
    expect((await request(svc.app).get(`/v1/resources/${created.id}`)).status).toBe(404);
  });

  it(
    'soft-deletes a resource that has a payment attempt, keeping it readable by its seller (404 to others) and ' +
      'out of the active list',
    async () => {
      const created = await createResource(seller);
      await svc.db.query(
        `INSERT INTO payment_attempts (id, resource_id, version_id, seller_id, payment_hash, network, payer, nonce,
        asset_code, asset_issuer, amount, pay_to, status, expires_at_ledger, authorization_xdr)
       VALUES (:id, :rid, :vid, :sid, repeat('ab', 32), 'stellar:testnet', :payer, '1', 'USDC', :issuer,
         0.01, :payTo, 'verified', 100, 'x')`,
        {
          replacements: {
            id: newId('payment'),
            rid: created.id,
            vid: created.versionId,
            sid: seller.id,
            payer: Keypair.random().publicKey(),
            issuer: DEFAULT_USDC_ISSUER['stellar:testnet'],
            payTo: seller.wallet.publicKey(),
          },
        },
      );
      const res = await request(svc.app).delete(`/v1/resources/${created.id}`).set(bearer(seller.apiKey));
      expect(res.status).toBe(200);
      expect(res.body.mode).toBe('soft');
      const hidden = await request(svc.app).get(`/v1/resources/${created.id}`);
      expect(hidden.status).toBe(404);
      expect(hidden.body.error.code).toBe('RESOURCE_NOT_FOUND');
      const read = await request(svc.app).get(`/v1/resources/${created.id}`).set(bearer(seller.apiKey));
      expect(read.status).toBe(200);
      expect(read.body.status).toBe('deleted');
      const active = await request(svc.app).get('/v1/resources').query({ sellerId: seller.id, limit: 100 });
      expect(active.body.items.map((r: { id: string }) => r.id)).not.toContain(created.id);
      const deleted = await request(svc.app)
        .get('/v1/resources')
        .set(bearer(seller.apiKey))
        .query({ sellerId: seller.id, status: 'deleted' });
      expect(deleted.body.items.map((r: { id: string }) => r.id)).toContain(created.id);
      const anonymous = await request(svc.app).get('/v1/resources').query({ sellerId: seller.id, status: 'deleted' });
      expect(anonymous.status).toBe(401);
      const other = await signUpSeller(svc.app);
      const foreign = await request(svc.app)
        .get('/v1/resources')
        .set(bearer(other.apiKey))
        .query({ sellerId: seller.id, status: 'deleted' });
      expect(foreign.status).toBe(403);
      const payments = await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(seller.apiKey));
      expect(payments.body.items).toHaveLength(1);
      expect(payments.body.items[0]).not.toHaveProperty('authorizationXdr');
    },
  );

  it('when another seller deletes it, it fails with FORBIDDEN', async () => {
    const created = await createResource(seller);
    const other = await signUpSeller(svc.app);
    const res = await request(svc.app).delete(`/v1/resources/${created.id}`).set(bearer(other.apiKey));
    expect(res.status).toBe(403);
    expect((await request(svc.app).get(`/v1/resources/${created.id}`)).status).toBe(200);
  });
});
