/**
 * Issue #22, the catalog a newcomer can act on:
 * - validation: every error of a request at once, each naming its field, what was wrong and what is allowed, no raw
 *   regular expression, no repeated word;
 * - duplicates: a second active resource with the same seller, method and URL is 409 naming the first (a database
 *   constraint holds it under concurrency); a verified domain belongs to one seller (also a constraint);
 * - seller readiness: validate and catalog warn when payTo cannot receive the asset (no account, no trustline).
 */
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { DEFAULT_USDC_ISSUER } from '../../src/config';

let svc: TestService;
let network: LocalNetwork;
beforeAll(async () => {
  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 200 });
  svc = await startTestService({
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
  });
});
afterAll(async () => {
  await svc?.stop();
  await network?.stop();
});

const repeatedWord = /\b(\w+) \1\b/i;

describe('validation a person can act on', () => {
  let seller: SignedUpSeller;
  beforeAll(async () => {
    seller = await signUpSeller(svc.app);
  });

  it(
    'when a resource has a comma amount, a malformed network and a short payTo, all three come back at once, in ' +
      'words, each naming its field',
    async () => {
      const res = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { amount: '1,5', network: 'futurenet', payTo: 'GABC' }));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
      const details = res.body.error.details as Array<{ field: string; message: string }>;
      expect(details).toEqual(
        expect.arrayContaining([
          {
            field: 'amount',
            message:
              'must be a positive decimal amount written with a dot and at most 7 decimals, e.g. 0.01 or 12.5 ' +
              '(no comma, sign or exponent)',
          },
          { field: 'network', message: 'must be a network id: stellar:testnet or stellar:pubnet' },
          { field: 'payTo', message: 'must be a Stellar account (G...) or contract (C...) address of 56 characters' },
        ]),
      );
      expect(details).toHaveLength(3);
      for (const d of details) {
        expect(d.message).not.toMatch(/pattern|\^|\$|\[/);
        expect(d.message).not.toMatch(repeatedWord);
      }
      expect(res.body.error.message).toContain('amount must be a positive decimal amount');
      expect(res.body.error.message).not.toMatch(/\^\(/);
    },
  );

  it(
    'when the discovery validate request has a bad amount and an ' + 'unknown field, both are named in one answer',
    async () => {
      const { sellerId: _s, ...draft } = resourceInput(seller, { amount: '-1' });
      const res = await request(svc.app)
        .post('/v1/discovery/validate')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resource: { ...draft, colour: 'red' } });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toHaveLength(2);
      expect(res.body.error.details).toEqual(
        expect.arrayContaining([
          { field: 'resource.amount', message: expect.stringContaining('e.g. 0.01') },
          { field: 'resource.colour', message: 'is not a field of this operation: remove it' },
        ]),
      );
    },
  );

  it('when the network is well formed but not served here, the message lists the supported networks', async () => {
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { network: 'stellar:futurenet' }));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'UNSUPPORTED_NETWORK',
      details: [
        {
          field: 'network',
          code: 'UNSUPPORTED_NETWORK',
          message: 'stellar:futurenet is not supported; supported networks: stellar:testnet, stellar:pubnet',
        },
      ],
    });
    expect(res.body.error.message).not.toMatch(repeatedWord);
  });

  it(
    'when the asset is not accepted on the network, the message ' + 'names the accepted assets and repeats no word',
    async () => {
      const issuer = Keypair.random().publicKey();
      const res = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { assetCode: 'EURC', assetIssuer: issuer }));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('UNSUPPORTED_ASSET');
      expect(res.body.error.details).toEqual([
        {
          field: 'assetCode',
          code: 'UNSUPPORTED_ASSET',
          message:
            `EURC issued by ${issuer} is not accepted on stellar:testnet; accepted there: USDC issued by ` +
            `${DEFAULT_USDC_ISSUER['stellar:testnet']}`,
        },
      ]);
      expect(res.body.error.message).toBe(`The resource is not valid: assetCode: ${res.body.error.details[0].message}`);
      expect(res.body.error.message).not.toMatch(repeatedWord);
    },
  );

  it('when several catalog rules fail, validate lists every one', async () => {
    const { sellerId: _s, ...draft } = resourceInput(seller, {
      url: 'https://elsewhere.example.org/v1/other',
      routeTemplate: '/v1/forecast/{city}',
      inputSchema: { type: 'nonsense' },
    });
    const res = await request(svc.app)
      .post('/v1/discovery/validate')
      .set(bearer(seller.apiKey))
      .send({ sellerId: seller.id, resource: draft });
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(false);
    const fields = (res.body.errors as Array<{ field: string }>).map((e) => e.field).sort();
    expect(fields).toEqual(['resource.inputSchema', 'resource.routeTemplate', 'resource.url']);
  });
});

describe('duplicates', () => {
  it(
    'when a seller creates the same method and URL twice, the second is 409 DUPLICATE_RESOURCE naming the first, ' +
      'and only one is stored',
    async () => {
      const seller = await signUpSeller(svc.app);
      const input = resourceInput(seller);
      const first = await request(svc.app).post('/v1/resources').set(bearer(seller.apiKey)).send(input);
      expect(first.status).toBe(201);
      const second = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send({ ...input, name: 'Another name' });
      expect(second.status).toBe(409);
      expect(second.body.error.code).toBe('DUPLICATE_RESOURCE');
      expect(second.body.error.message).toContain(`as resource ${first.body.id}`);
      expect(second.body.error.details).toEqual([
        {
          field: 'url',
          code: 'DUPLICATE_RESOURCE',
          message: `already listed by your active resource ${first.body.id} (GET https://${seller.domain}/v1/forecast/{city})`,
        },
      ]);
      const [rows] = await svc.db.query(
        `SELECT id FROM resources WHERE seller_id = '${seller.id}' AND status = 'active'`,
      );
      expect(rows).toEqual([{ id: first.body.id }]);
    },
  );

  it(
    'when the same URL is cataloged again without resourceId, the catalog answers 409 naming the first; another ' +
      'method on that URL is a separate listing',
    async () => {
      const seller = await signUpSeller(svc.app);
      const { sellerId: _s, ...draft } = resourceInput(seller);
      const first = await request(svc.app)
        .post('/v1/discovery/catalog')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resource: draft });
      expect(first.status).toBe(201);
      const again = await request(svc.app)
        .post('/v1/discovery/catalog')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resource: { ...draft, name: 'Renamed' } });
      expect(again.status).toBe(409);
      expect(again.body.error).toMatchObject({
        code: 'DUPLICATE_RESOURCE',
        details: [expect.objectContaining({ message: expect.stringContaining(first.body.resourceId) })],
      });
      const post = {
        ...draft,
        extensions: { bazaar: { discoverable: true, info: { input: { type: 'http', method: 'POST' } } } },
      };
      const other = await request(svc.app)
        .post('/v1/discovery/catalog')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resource: post });
      expect(other.status).toBe(201);
      // updating the first through resourceId is how a seller changes it
      const update = await request(svc.app)
        .post('/v1/discovery/catalog')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resourceId: first.body.resourceId, resource: { ...draft, name: 'Renamed' } });
      expect(update.status).toBe(201);
      expect(update.body.resourceId).toBe(first.body.resourceId);
    },
  );

  it(
    'when a resource is changed to the URL of another active one, the change is 409; after deleting the first, ' +
      'the URL is free again',
    async () => {
      const seller = await signUpSeller(svc.app);
      const input = resourceInput(seller);
      const a = await request(svc.app).post('/v1/resources').set(bearer(seller.apiKey)).send(input);
      const b = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(
          resourceInput(seller, { url: `https://${seller.domain}/v1/other/{city}`, routeTemplate: '/v1/other/{city}' }),
        );
      expect(b.status).toBe(201);
      const moved = await request(svc.app)
        .patch(`/v1/resources/${b.body.id}`)
        .set(bearer(seller.apiKey))
        .send({ url: a.body.url, routeTemplate: '/v1/forecast/{city}' });
      expect(moved.status).toBe(409);
      expect(moved.body.error.code).toBe('DUPLICATE_RESOURCE');
      expect(moved.body.error.message).toContain(a.body.id);
      expect((await request(svc.app).delete(`/v1/resources/${a.body.id}`).set(bearer(seller.apiKey))).status).toBe(200);
      const again = await request(svc.app).post('/v1/resources').set(bearer(seller.apiKey)).send(input);
      expect(again.status).toBe(201);
    },
  );

  it(
    'when ten identical creates race, exactly one is stored and the nine others are 409 naming it (the database ' +
      'constraint decides)',
    async () => {
      const seller = await signUpSeller(svc.app);
      const input = resourceInput(seller);
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => request(svc.app).post('/v1/resources').set(bearer(seller.apiKey)).send(input)),
      );
      const created = answers.filter((r) => r.status === 201);
      expect(created).toHaveLength(1);
      const refused = answers.filter((r) => r.status === 409);
      expect(refused).toHaveLength(9);
      for (const r of refused) expect(r.body.error.message).toContain(created[0].body.id);
      const [rows] = await svc.db.query(
        `SELECT count(*)::int AS n FROM resources WHERE seller_id = '${seller.id}' AND status = 'active'`,
      );
      expect(rows).toEqual([{ n: 1 }]);
    },
  );

  it('when two sellers share a domain, the database lets only one of them hold it verified', async () => {
    const domain = `shared-${Date.now()}.example.com`;
    const a = await signUpSeller(svc.app, { domain });
    const b = await signUpSeller(svc.app, { domain });
    await svc.db.query(`UPDATE sellers SET domain_verified_at = now() WHERE id = '${a.id}'`);
    await expect(
      svc.db.query(`UPDATE sellers SET domain_verified_at = now() WHERE id = '${b.id}'`),
    ).rejects.toMatchObject({ name: 'SequelizeUniqueConstraintError' });
    const check = await request(svc.app)
      .post(`/v1/sellers/${b.id}/verify-domain`)
      .set(bearer(b.apiKey))
      .send({ method: 'dns_txt' });
    expect(check.status).toBe(200);
    expect(check.body).toMatchObject({
      status: 'failed',
      failureReason: expect.stringContaining('another seller has already verified this domain'),
    });
  });
});

describe('seller readiness: a listing nobody can pay is flagged', () => {
  const usdc = () => network.assets.find((a) => a.code === 'USDC')!;

  it(
    'when payTo has an account but no USDC trustline, validate and catalog warn TRUSTLINE_REQUIRED on ' +
      'resource.payTo; once the trustline exists, no warning',
    async () => {
      const seller = await signUpSeller(svc.app);
      await network.fundAccount(seller.wallet.publicKey());
      const { sellerId: _s, ...draft } = resourceInput(seller, { assetIssuer: usdc().issuer });
      const warning = {
        code: 'TRUSTLINE_REQUIRED',
        field: 'resource.payTo',
        message:
          `the wallet ${seller.wallet.publicKey()} has no trustline to USDC issued by ${usdc().issuer} on ` +
          `stellar:testnet: nobody can pay this listing until the wallet adds one (a changeTrust operation)`,
      };
      const v = await request(svc.app)
        .post('/v1/discovery/validate')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resource: draft });
      expect(v.body.ok).toBe(true);
      expect(v.body.warnings).toContainEqual(warning);
      const c = await request(svc.app)
        .post('/v1/discovery/catalog')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resource: draft });
      expect(c.status).toBe(201);
      expect(c.body.warnings).toContainEqual(warning);

      await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
      const after = await request(svc.app)
        .post('/v1/discovery/validate')
        .set(bearer(seller.apiKey))
        .send({ sellerId: seller.id, resource: draft });
      expect(after.body.warnings.filter((w: { code: string }) => w.code === 'TRUSTLINE_REQUIRED')).toEqual([]);
    },
  );

  it('when payTo does not exist on the ledger, the warning says to fund it and add the trustline', async () => {
    const seller = await signUpSeller(svc.app);
    const { sellerId: _s, ...draft } = resourceInput(seller, { assetIssuer: usdc().issuer });
    const v = await request(svc.app)
      .post('/v1/discovery/validate')
      .set(bearer(seller.apiKey))
      .send({ sellerId: seller.id, resource: draft });
    expect(v.body.warnings).toContainEqual({
      code: 'TRUSTLINE_REQUIRED',
      field: 'resource.payTo',
      message:
        `the wallet ${seller.wallet.publicKey()} does not exist on stellar:testnet: fund it with XLM and add a ` +
        `trustline to USDC issued by ${usdc().issuer}, or every payment to this listing will be refused`,
    });
  });
});
