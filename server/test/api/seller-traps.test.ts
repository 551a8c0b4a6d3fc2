/**
 * Issue 32, the traps that cost a seller real sales, refused or warned about where the seller can act:
 * - a price below the facilitator's minimum (FACILITATOR_MIN_AMOUNT) is refused at validation, in the asset's units,
 *   on every entrance that stores or checks terms (resource create and update, discovery validate and catalog);
 * - `POST /v1/resources` returns the readiness warning (TRUSTLINE_REQUIRED on payTo) validate and catalog give.
 */
import request from 'supertest';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';

let svc: TestService;
let network: LocalNetwork;
let seller: SignedUpSeller;
beforeAll(async () => {
  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 200 });
  svc = await startTestService({
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
  });
  seller = await signUpSeller(svc.app);
  await network.fundAccount(seller.wallet.publicKey());
  await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
});
afterAll(async () => {
  await svc?.stop();
  await network?.stop();
});

const MINIMUM = 'must be at least 0.0001 USDC: the facilitator refuses smaller payments (FACILITATOR_MIN_AMOUNT)';

describe(
  'a price below the facilitator minimum is refused at ' + 'validation, with the minimum in the asset’s units',
  () => {
    it('price below minimum on create: 400 naming "at least 0.0001 USDC", nothing stored', async () => {
      const input = resourceInput(seller, { amount: '0.00005' });
      const res = await request(svc.app).post('/v1/resources').set(bearer(seller.apiKey)).send(input);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('CATALOG_VALIDATION_FAILED');
      expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'amount', message: MINIMUM })]);
      const [rows] = await svc.db.query(
        `SELECT count(*)::int AS n FROM resources WHERE seller_id = '${seller.id}' AND url = '${input.url}'`,
      );
      expect(rows).toEqual([{ n: 0 }]);
    });

    it('price below minimum on update: 400, the listed price stays', async () => {
      const created = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { amount: '0.0001' }));
      expect(created.status).toBe(201);
      const res = await request(svc.app)
        .patch(`/v1/resources/${created.body.id}`)
        .set(bearer(seller.apiKey))
        .send({ amount: '0.0000999' });
      expect(res.status).toBe(400);
      expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'amount', message: MINIMUM })]);
      expect((await request(svc.app).get(`/v1/resources/${created.body.id}`)).body.amount).toBe('0.0001');
    });

    it(
      'price below minimum on discovery validate and catalog: the ' + 'error names resource.amount and the minimum',
      async () => {
        const { sellerId: _s, ...draft } = resourceInput(seller, { amount: '0.0000001' });
        const validate = await request(svc.app)
          .post('/v1/discovery/validate')
          .set(bearer(seller.apiKey))
          .send({ sellerId: seller.id, resource: draft });
        expect(validate.status).toBe(200);
        expect(validate.body.ok).toBe(false);
        expect(validate.body.errors).toEqual([expect.objectContaining({ field: 'resource.amount', message: MINIMUM })]);
        const catalog = await request(svc.app)
          .post('/v1/discovery/catalog')
          .set(bearer(seller.apiKey))
          .send({ sellerId: seller.id, resource: draft });
        expect(catalog.status).toBe(400);
        expect(catalog.body.error.details).toEqual([
          expect.objectContaining({ field: 'resource.amount', message: MINIMUM }),
        ]);
      },
    );
  },
);

describe('POST /v1/resources returns the readiness warning', () => {
  it(
    'when the seller’s wallet has no USDC trustline, create ' + 'answers 201 with TRUSTLINE_REQUIRED on payTo',
    async () => {
      const bare = await signUpSeller(svc.app);
      await network.fundAccount(bare.wallet.publicKey()); // an account, but no trustline
      const res = await request(svc.app).post('/v1/resources').set(bearer(bare.apiKey)).send(resourceInput(bare));
      expect(res.status).toBe(201);
      expect(res.body.warnings).toEqual([
        { code: 'TRUSTLINE_REQUIRED', field: 'payTo', message: expect.stringContaining('has no trustline to USDC') },
      ]);
    },
  );

  it('when the wallet can receive the asset, create answers 201 with no warnings', async () => {
    const res = await request(svc.app).post('/v1/resources').set(bearer(seller.apiKey)).send(resourceInput(seller));
    expect(res.status).toBe(201);
    expect(res.body.warnings).toEqual([]);
  });
});
