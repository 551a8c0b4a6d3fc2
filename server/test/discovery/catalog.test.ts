import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { catalog, draft, validate } from './helpers';

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

async function count(sql: string): Promise<number> {
  const [[row]] = (await svc.db.query(`SELECT count(*)::int AS n FROM ${sql}`)) as [Array<{ n: number }>, unknown];
  return row.n;
}

/** Asserts that validate reports the issue and catalog refuses the same body, storing nothing. */
async function expectRejected(
  s: SignedUpSeller,
  body: Record<string, unknown>,
  expected: { code: string; field?: string; status?: number; catalogCode?: string },
) {
  const before = await count('resources');
  const v = await validate(svc.app, s.apiKey, body);
  expect(v.status).toBe(200);
  expect(v.body.ok).toBe(false);
  expect(v.body.errors).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ code: expected.code, ...(expected.field ? { field: expected.field } : {}) }),
    ]),
  );
  const c = await catalog(svc.app, s.apiKey, body);
  expect(c.status).toBe(expected.status ?? 400);
  expect(c.body.error.code).toBe(expected.catalogCode ?? expected.code);
  expect(c.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ code: expected.code })]));
  expect(await count('resources')).toBe(before);
  return { validation: v.body, error: c.body.error };
}

describe('POST /v1/discovery/catalog', () => {
  it(
    'catalogs a new resource: resource, version, catalog event ' + 'and a queued indexing job in one go (201)',
    async () => {
      const res = await catalog(svc.app, seller.apiKey, { sellerId: seller.id, resource: draft(seller) });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        ok: true,
        resourceId: expect.stringMatching(/^res_/),
        versionId: expect.stringMatching(/^ver_/),
        catalogEventId: expect.stringMatching(/^cev_/),
        indexingStatus: 'queued',
        warnings: [expect.objectContaining({ field: 'resource.extensions.bazaar.info' })],
      });
      const [rows] = await svc.db
        .query(`SELECT r.current_version_id AS v, r.version, e.kind, e.version_id AS ev, e.indexed_at
      FROM resources r JOIN catalog_events e ON e.resource_id = r.id WHERE r.id = '${res.body.resourceId}'`);
      expect(rows).toEqual([
        { v: res.body.versionId, version: 1, kind: 'cataloged', ev: res.body.versionId, indexed_at: null },
      ]);
      expect(await count(`resource_versions WHERE resource_id = '${res.body.resourceId}'`)).toBe(1);
      expect(
        await count(
          `agenda_jobs WHERE name = 'resource-indexing-worker' AND data->>'catalogEventId' = ` +
            `'${res.body.catalogEventId}'`,
        ),
      ).toBe(1);
    },
  );

  it('re-cataloging an unchanged resource answers 200 with the current version and stores no new version', async () => {
    const terms = draft(seller, { name: 'Unchanged one' });
    const first = await catalog(svc.app, seller.apiKey, { sellerId: seller.id, resource: terms });
    const again = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resourceId: first.body.resourceId,
      resource: { ...terms, amount: '0.0100000' },
    });
    expect(again.status).toBe(200);
    expect(again.body.versionId).toBe(first.body.versionId);
    expect(again.body.catalogEventId).not.toBe(first.body.catalogEventId);
    expect(await count(`resource_versions WHERE resource_id = '${first.body.resourceId}'`)).toBe(1);
  });

  it('re-cataloging changed terms stores a new version (201)', async () => {
    const first = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resource: draft(seller, { name: 'Changes price' }),
    });
    const again = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resourceId: first.body.resourceId,
      resource: draft(seller, { name: 'Changes price', amount: '0.02' }),
    });
    expect(again.status).toBe(201);
    expect(again.body.versionId).not.toBe(first.body.versionId);
    const [rows] = await svc.db.query(
      `SELECT version, amount::text AS amount FROM resources WHERE id = '${first.body.resourceId}'`,
    );
    expect(rows).toEqual([{ version: 2, amount: '0.0200000' }]);
    // Each version's amount column holds the decimal price, not the stroops the domain carries it in.
    const [versions] = await svc.db.query(
      `SELECT version, amount::text AS amount FROM resource_versions WHERE resource_id = '${first.body.resourceId}'
        ORDER BY version`,
    );
    expect(versions).toEqual([
      { version: 1, amount: '0.0100000' },
      { version: 2, amount: '0.0200000' },
    ]);
  });

  it('without an API key it fails with UNAUTHORIZED; the operator may catalog for any seller', async () => {
    expect((await catalog(svc.app, null, { sellerId: seller.id, resource: draft(seller) })).status).toBe(401);
    expect(
      (
        await catalog(svc.app, OPERATOR_KEY, {
          sellerId: seller.id,
          resource: draft(seller, { name: 'By the operator' }),
        })
      ).status,
    ).toBe(201);
  });

  it("re-cataloging another seller's resource id is FORBIDDEN", async () => {
    const mine = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resource: draft(seller, { name: 'Mine' }),
    });
    const res = await catalog(svc.app, other.apiKey, {
      sellerId: other.id,
      resourceId: mine.body.resourceId,
      resource: draft(other),
    });
    expect(res.status).toBe(403);
  });

  it('validate stores nothing and reports warnings that do not block', async () => {
    const before = await count('resources');
    const res = await validate(svc.app, null, { sellerId: seller.id, resource: draft(seller) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, errors: [] });
    expect(res.body.warnings).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'resource.extensions.bazaar.info' })]),
    );
    expect(await count('resources')).toBe(before);
  });
});

describe('anti-poisoning: each class is rejected by validate and by catalog', () => {
  it(
    'forged seller metadata: cataloging for another seller with ' + 'your key is refused (403), validate reports it',
    async () => {
      const v = await validate(svc.app, other.apiKey, { sellerId: seller.id, resource: draft(seller) });
      expect(v.body.ok).toBe(false);
      expect(v.body.errors).toEqual(
        expect.arrayContaining([expect.objectContaining({ code: 'FORBIDDEN', field: 'sellerId' })]),
      );
      const c = await catalog(svc.app, other.apiKey, { sellerId: seller.id, resource: draft(seller) });
      expect(c.status).toBe(403);
      expect(c.body.error.code).toBe('FORBIDDEN');
    },
  );

  it(
    'forged seller metadata: a payTo that is not the seller ' + 'wallet is refused unless the seller declares it',
    async () => {
      const treasury = Keypair.random().publicKey();
      await expectRejected(
        seller,
        { sellerId: seller.id, resource: draft(seller, { payTo: treasury }) },
        { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.payTo' },
      );
      const declared = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        payToDeclared: true,
        resource: draft(seller, { name: 'Treasury paid', payTo: treasury }),
      });
      expect(declared.status).toBe(201);
      const [rows] = await svc.db.query(
        `SELECT declared_pay_to FROM catalog_declarations WHERE resource_id = '${declared.body.resourceId}'`,
      );
      expect(rows).toEqual([{ declared_pay_to: treasury }]);
    },
  );

  it("forged seller metadata: another seller's wallet as payTo is refused even when declared", async () => {
    const body = {
      sellerId: seller.id,
      payToDeclared: true,
      resource: draft(seller, { payTo: other.wallet.publicKey() }),
    };
    const { validation } = await expectRejected(seller, body, {
      code: 'CATALOG_VALIDATION_FAILED',
      field: 'resource.payTo',
    });
    expect(validation.errors[0].message).toMatch(/another seller/);
  });

  it("forged seller metadata: a URL on a domain that is not the seller's is refused", async () => {
    const body = {
      sellerId: seller.id,
      resource: draft(seller, { url: `https://${other.domain}/v1/forecast/{city}` }),
    };
    await expectRejected(seller, body, { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.url' });
  });

  it.each([
    ['/v1/../admin', 'traversal'],
    ['/v1//forecast/{city}', 'an empty segment'],
    ['https://evil.example/v1/{city}', 'a scheme'],
    ['/v1/%2e%2e/{city}', 'an encoded dot segment'],
    ['/v1/%2F/{city}', 'an encoded slash'],
    ['/v1/{city', 'an unbalanced placeholder'],
    ['/v1/{city}/{city}', 'a duplicate placeholder'],
  ])('malformed or unsafe route template %s (%s) is refused with ROUTE_TEMPLATE_INVALID', async (routeTemplate) => {
    await expectRejected(
      seller,
      { sellerId: seller.id, resource: draft(seller, { routeTemplate }) },
      { code: 'ROUTE_TEMPLATE_INVALID', field: 'resource.routeTemplate' },
    );
  });

  it('unsupported network is refused with UNSUPPORTED_NETWORK', async () => {
    await expectRejected(
      seller,
      { sellerId: seller.id, resource: draft(seller, { network: 'stellar:futurenet' }) },
      { code: 'UNSUPPORTED_NETWORK', field: 'resource.network' },
    );
  });

  it('unsupported asset is refused with UNSUPPORTED_ASSET', async () => {
    await expectRejected(
      seller,
      { sellerId: seller.id, resource: draft(seller, { assetCode: 'EURC' }) },
      { code: 'UNSUPPORTED_ASSET', field: 'resource.assetCode' },
    );
  });

  it('a trusted-seller claim without a verified domain is refused with SELLER_DOMAIN_UNVERIFIED (403)', async () => {
    await expectRejected(
      seller,
      { sellerId: seller.id, trusted: true, resource: draft(seller) },
      { code: 'SELLER_DOMAIN_UNVERIFIED', field: 'trusted', status: 403 },
    );
  });

  it.each([
    [{ type: 'nonsense' }, 'an invalid schema'],
    [{ $ref: 'https://evil.example/schema.json' }, 'an external $ref (never fetched)'],
    [{ type: 'object', properties: { a: { $ref: 'other.json#/x' } } }, 'a relative external $ref'],
  ])('an invalid JSON Schema (%j, %s) is refused', async (inputSchema: object, _why: string) => {
    await expectRejected(
      seller,
      { sellerId: seller.id, resource: draft(seller, { inputSchema }) },
      { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.inputSchema' },
    );
  });

  describe('ambiguous MCP metadata', () => {
    const mcp = (s: SignedUpSeller, extensions: Record<string, unknown>, overrides: Record<string, unknown> = {}) =>
      draft(s, { type: 'mcp', url: `https://${s.domain}/mcp`, routeTemplate: '/mcp', extensions, ...overrides });

    it('a type mcp resource without a tool name is refused', async () => {
      await expectRejected(
        seller,
        { sellerId: seller.id, resource: mcp(seller, { mcp: { description: 'no name' } }) },
        { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.extensions.mcp.toolName' },
      );
    });

    it('two different tool names (toolName and the older tool) are refused', async () => {
      await expectRejected(
        seller,
        { sellerId: seller.id, resource: mcp(seller, { mcp: { toolName: 'a', tool: 'b' } }) },
        { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.extensions.mcp.toolName' },
      );
    });

    it('the same tool name on the same server URL as another cataloged resource is refused', async () => {
      const first = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resource: mcp(seller, { mcp: { toolName: 'forecast' } }),
      });
      expect(first.status).toBe(201);
      // The older spelling `tool` names the same tool.
      const dup = { sellerId: seller.id, resource: mcp(seller, { mcp: { tool: 'forecast' } }, { name: 'Copy' }) };
      const c = await catalog(svc.app, seller.apiKey, dup);
      expect(c.status).toBe(400);
      expect(c.body.error.details).toEqual([
        expect.objectContaining({
          field: 'resource.extensions.mcp.toolName',
          message: expect.stringContaining(first.body.resourceId),
        }),
      ]);
      // Re-cataloging the first one itself is fine.
      const again = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resourceId: first.body.resourceId,
        resource: mcp(seller, { mcp: { toolName: 'forecast' } }),
      });
      expect(again.status).toBe(200);
      // validate: the seller's own tool only warns (it may be about to re-catalog it); another seller on the same URL
      // is refused.
      const v = await validate(svc.app, null, dup);
      expect(v.body.ok).toBe(true);
      expect(v.body.warnings).toEqual(
        expect.arrayContaining([expect.objectContaining({ field: 'resource.extensions.mcp.toolName' })]),
      );
    });

    it('a tool name that differs from the one its input schema names is refused', async () => {
      const inputSchema = { type: 'object', 'x-mcp-tool': 'weather', properties: { city: { type: 'string' } } };
      await expectRejected(
        seller,
        { sellerId: seller.id, resource: mcp(seller, { mcp: { toolName: 'forecast2' } }, { inputSchema }) },
        { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.inputSchema' },
      );
    });

    it('an http/mcp type mismatch is refused (mcp extension on http, Bazaar http input on mcp)', async () => {
      await expectRejected(
        seller,
        { sellerId: seller.id, resource: draft(seller, { extensions: { mcp: { toolName: 'x' } } }) },
        { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.extensions.mcp' },
      );
      await expectRejected(
        seller,
        {
          sellerId: seller.id,
          resource: mcp(seller, {
            mcp: { toolName: 'mismatch' },
            bazaar: { info: { input: { type: 'http', method: 'GET' } } },
          }),
        },
        { code: 'CATALOG_VALIDATION_FAILED', field: 'resource.extensions.bazaar.info.input.type' },
      );
    });
  });

  describe('x402 Bazaar metadata', () => {
    const schema = {
      type: 'object',
      required: ['input'],
      properties: {
        input: {
          type: 'object',
          required: ['type', 'method'],
          properties: { type: { const: 'http' }, method: { enum: ['GET', 'POST'] } },
        },
      },
    };

    it('info that matches its schema is accepted, MCP toolName inside Bazaar info too', async () => {
      const res = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resource: draft(seller, {
          name: 'With bazaar',
          extensions: {
            bazaar: { info: { input: { type: 'http', method: 'GET', queryParams: { city: 'Lisbon' } } }, schema },
          },
        }),
      });
      expect(res.status).toBe(201);
      const mcpRes = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resource: draft(seller, {
          type: 'mcp',
          url: `https://${seller.domain}/mcp2`,
          routeTemplate: '/mcp2',
          extensions: { mcp: { toolName: 'lookup' }, bazaar: { info: { input: { type: 'mcp', toolName: 'lookup' } } } },
        }),
      });
      expect(mcpRes.status).toBe(201);
    });

    it('info that does not match its schema is refused', async () => {
      const body = {
        sellerId: seller.id,
        resource: draft(seller, {
          extensions: { bazaar: { info: { input: { type: 'http', method: 'TRACE' } }, schema } },
        }),
      };
      await expectRejected(seller, body, {
        code: 'CATALOG_VALIDATION_FAILED',
        field: 'resource.extensions.bazaar.info',
      });
    });

    it('a Bazaar schema with an external $ref is refused', async () => {
      const body = {
        sellerId: seller.id,
        resource: draft(seller, {
          extensions: { bazaar: { info: {}, schema: { $ref: 'https://evil.example/s.json' } } },
        }),
      };
      await expectRejected(seller, body, {
        code: 'CATALOG_VALIDATION_FAILED',
        field: 'resource.extensions.bazaar.schema',
      });
    });
  });

  it(
    'validation failures are counted on /metrics by reason, with ' + 'route template and domain verification failures',
    async () => {
      const res = await request(svc.app)
        .get('/metrics')
        .set({ Authorization: `Bearer ${OPERATOR_KEY}` });
      expect(res.status).toBe(200);
      for (const reason of [
        'route_template',
        'unsupported_network',
        'unsupported_asset',
        'domain_unverified',
        'invalid_schema',
        'ambiguous_mcp',
        'forged_seller_metadata',
      ]) {
        expect(res.text).toMatch(
          new RegExp(`discovery_catalog_validation_failures_total\\{[^}]*reason="${reason}"[^}]*\\} [1-9]`),
        );
      }
      expect(res.text).toMatch(/discovery_route_template_failures_total\{[^}]*\} [1-9]/);
      expect(res.text).toMatch(/discovery_domain_verification_failures_total\{[^}]*\} [1-9]/);
      expect(res.text).toMatch(/discovery_catalog_events_total\{[^}]*kind="cataloged"[^}]*\} [1-9]/);
      expect(res.text).toMatch(/discovery_index_lag_seconds\{[^}]*\} [0-9.]+/);
    },
  );

  it('the listing shows partialResults while cataloged resources wait for indexing (no worker here)', async () => {
    const res = await request(svc.app).get('/v1/discovery/resources');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ resources: [], nextCursor: null, partialResults: true });
  });
});
