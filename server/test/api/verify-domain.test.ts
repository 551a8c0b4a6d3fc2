import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller } from '../support/fixtures';
import { createSafeFetcher } from '../../src/net';
import { DEFAULT_USDC_ISSUER } from '../../src/config';

/** A seller's web server on loopback: serves whatever each test puts in `files`. */
const files = new Map<string, string>();
let site: http.Server;
let svc: TestService;
const txt = new Map<string, string[][]>();

beforeAll(async () => {
  site = http.createServer((req, res) => {
    const body = files.get(req.url ?? '');
    if (body === undefined) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end(body);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  const port = (site.address() as AddressInfo).port;
  svc = await startTestService({
    domainCheck: {
      fetchText: createSafeFetcher({
        allowInsecureForTests: true,
        allowPrivateAddressesForTests: true,
        timeoutMs: 2000,
      }),
      resolveTxt: async (name) => txt.get(name) ?? [],
    },
    domainUrlBase: () => `http://127.0.0.1:${port}`,
  });
});
afterAll(async () => {
  await svc.stop();
  await new Promise((resolve) => site.close(resolve));
});

describe('POST /v1/sellers/:sellerId/verify-domain', () => {
  it('without a method, creates a challenge listing the three methods, and the seller becomes pending', async () => {
    const seller = await signUpSeller(svc.app);
    const res = await request(svc.app)
      .post(`/v1/sellers/${seller.id}/verify-domain`)
      .set(bearer(seller.apiKey))
      .send({});
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      sellerId: seller.id,
      domain: seller.domain,
      status: 'pending',
      checkedMethod: null,
      domainVerifiedAt: null,
    });
    expect(res.body.methods.map((m: { method: string }) => m.method).sort()).toEqual([
      'dns_txt',
      'https_well_known',
      'stellar_toml',
    ]);
    const again = await request(svc.app)
      .post(`/v1/sellers/${seller.id}/verify-domain`)
      .set(bearer(seller.apiKey))
      .send({});
    expect(again.body.token).toBe(res.body.token);
    expect((await request(svc.app).get(`/v1/sellers/${seller.id}`)).body.verificationStatus).toBe('pending');
  });

  it(
    'with stellar_toml, verifies a SEP-1 file listing the ' + 'wallet and the token, and sets domainVerifiedAt',
    async () => {
      const seller = await signUpSeller(svc.app);
      const challenge = await request(svc.app)
        .post(`/v1/sellers/${seller.id}/verify-domain`)
        .set(bearer(seller.apiKey))
        .send({});
      files.set(
        '/.well-known/stellar.toml',
        `# SEP-1\nACCOUNTS = ["${seller.wallet.publicKey()}"]\nMARKETPLACE_VERIFICATION = "${challenge.body.token}"\n`,
      );
      const res = await request(svc.app)
        .post(`/v1/sellers/${seller.id}/verify-domain`)
        .set(bearer(seller.apiKey))
        .send({ method: 'stellar_toml' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'verified', checkedMethod: 'stellar_toml', failureReason: null });
      expect(res.body.domainVerifiedAt).not.toBeNull();
      const profile = await request(svc.app).get(`/v1/sellers/${seller.id}`);
      expect(profile.body.verificationStatus).toBe('verified');
      const [rows] = await svc.db.query(`SELECT domain_verified_at FROM sellers WHERE id = '${seller.id}'`);
      expect((rows[0] as { domain_verified_at: Date | null }).domain_verified_at).not.toBeNull();
      // a verified seller may now list on pubnet
      const pubnet = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send(resourceInput(seller, { network: 'stellar:pubnet', assetIssuer: DEFAULT_USDC_ISSUER['stellar:pubnet'] }));
      expect(pubnet.status).toBe(201);
      expect(pubnet.body.sellerTrust).toMatchObject({ domainVerified: true, trusted: true });
    },
  );

  it(
    'with https_well_known, when the file holds another token, the check fails with a reason and the seller ' +
      'stays unverified',
    async () => {
      const seller = await signUpSeller(svc.app);
      await request(svc.app).post(`/v1/sellers/${seller.id}/verify-domain`).set(bearer(seller.apiKey)).send({});
      files.set('/.well-known/marketplace-verification.txt', 'someone-elses-token-aaaaaaaaaaaaaaaaaaaaaaaa');
      const res = await request(svc.app)
        .post(`/v1/sellers/${seller.id}/verify-domain`)
        .set(bearer(seller.apiKey))
        .send({ method: 'https_well_known' });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('failed');
      expect(res.body.failureReason).toMatch(/token_mismatch/);
      expect((await request(svc.app).get(`/v1/sellers/${seller.id}`)).body.domainVerifiedAt).toBeNull();
    },
  );

  it('with dns_txt, verifies the TXT record on _marketplace-verification.<domain>', async () => {
    const seller = await signUpSeller(svc.app);
    const challenge = await request(svc.app)
      .post(`/v1/sellers/${seller.id}/verify-domain`)
      .set(bearer(seller.apiKey))
      .send({});
    const dns = challenge.body.methods.find((m: { method: string }) => m.method === 'dns_txt');
    txt.set(dns.location, [[dns.expectedValue]]);
    const res = await request(svc.app)
      .post(`/v1/sellers/${seller.id}/verify-domain`)
      .set(bearer(seller.apiKey))
      .send({ method: 'dns_txt' });
    expect(res.body.status).toBe('verified');
  });

  it('when another seller asks, it fails with FORBIDDEN', async () => {
    const a = await signUpSeller(svc.app);
    const b = await signUpSeller(svc.app);
    const res = await request(svc.app).post(`/v1/sellers/${a.id}/verify-domain`).set(bearer(b.apiKey)).send({});
    expect(res.status).toBe(403);
  });
});
