/**
 * The x402 v2 facilitator API (/x402) driven by the stock HTTPFacilitatorClient and payloads signed by the stock
 * @x402/stellar client, against the real service, database and local network (local simulation).
 */
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme as ExactStellarClient } from '@x402/stellar/exact/client';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { ERROR_CODES } from '../../src/domain/errors';
import { X402_REASONS, x402Reason } from '../../src/http/x402';
import { OPERATOR_KEY, startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { httpsRpcFront } from '../../../test/support/marketplace';

type Requirements = Parameters<HTTPFacilitatorClient['verify']>[1];
type Payload = Parameters<HTTPFacilitatorClient['verify']>[0];

describe('the x402 v2 facilitator API', () => {
  let network: LocalNetwork;
  let svc: TestService;
  let server: http.Server;
  let base: string;
  let front: { rpcUrl: string; close(): Promise<void> };
  let facilitator: HTTPFacilitatorClient;
  let seller: SignedUpSeller;
  let catalogedUrl: string;
  let resourceId: string;

  beforeAll(async () => {
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
    svc = await startTestService({
      networks: testNetworks({
        rpcUrl: network.rpcUrl,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      facilitator: { channelAccounts: 2, pollMs: 25, confirmGraceMs: 10_000 },
    });
    server = await new Promise((resolve) => {
      const s = http.createServer(svc.app).listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    front = await httpsRpcFront(network);
    facilitator = new HTTPFacilitatorClient({ url: `${base}/x402` });
    seller = await signUpSeller(svc.app);
    await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
    const created = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { assetIssuer: network.assets[0].issuer, amount: '0.25' }));
    expect(created.status).toBe(201);
    resourceId = (created.body.resource ?? created.body).id;
    catalogedUrl = `https://${seller.domain}/v1/forecast/lisbon`;
  });

  afterAll(async () => {
    await front?.close();
    await new Promise((r) => server?.close(r));
    server?.closeAllConnections();
    await svc?.stop();
    await network?.stop();
  });

  function requirements(amount = '2500000'): Requirements {
    return {
      scheme: 'exact',
      network: 'stellar:testnet',
      asset: network.assets[0].contractId,
      amount,
      payTo: seller.wallet.publicKey(),
      maxTimeoutSeconds: 300,
      extra: { areFeesSponsored: true },
    };
  }

  async function signedPayment(payer: Keypair, req: Requirements, url: string): Promise<Payload> {
    const client = new ExactStellarClient(createEd25519Signer(payer.secret(), 'stellar:testnet'), {
      url: front.rpcUrl,
    });
    const created = await client.createPaymentPayload(2, req);
    return { ...created, accepted: req, resource: { url, description: '', mimeType: 'application/json' } } as Payload;
  }

  async function buyer(usdc = '3'): Promise<Keypair> {
    const k = Keypair.random();
    await network.faucet(k.publicKey(), 'USDC', usdc);
    return k;
  }

  it(
    'the stock client reads what is supported: exact on stellar:testnet with sponsored fees, bazaar, the channel ' +
      'signers',
    async () => {
      const supported = await facilitator.getSupported();
      expect(supported.kinds).toEqual([
        {
          x402Version: 2,
          scheme: 'exact',
          network: 'stellar:testnet',
          extra: { areFeesSponsored: true, paymentFlows: ['authorization', 'upfront'] },
        },
      ]);
      expect(supported.extensions).toEqual(['bazaar', 'payment-identifier']);
      expect(supported.signers['stellar:testnet']).toHaveLength(2);
    },
  );

  it(
    'a cataloged URL: settle without a prior verify records, links and settles once; settling it again is a ' +
      'duplicate',
    async () => {
      const payer = await buyer();
      const req = requirements();
      const payload = await signedPayment(payer, req, catalogedUrl);
      const settled = await facilitator.settle(payload, req);
      expect(settled).toMatchObject({
        success: true,
        network: 'stellar:testnet',
        payer: payer.publicKey(),
        transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      const ours = (settled.extensions as { marketplace: { paymentAttemptId: string; receiptId: string } }).marketplace;
      const payment = await request(svc.app).get(`/v1/payments/${ours.paymentAttemptId}`).set(bearer(OPERATOR_KEY));
      expect(payment.body).toMatchObject({
        resourceId,
        payer: payer.publicKey(),
        status: 'settled',
        receiptId: ours.receiptId,
      });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');

      const again = await facilitator.settle(payload, req);
      expect(again).toMatchObject({ success: false, errorReason: 'duplicate_settlement', transaction: '' });
      const reverify = await facilitator.verify(payload, req);
      expect(reverify).toMatchObject({ isValid: false, invalidReason: 'duplicate_settlement' });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');
    },
  );

  it(
    "an uncataloged URL: anonymous settle is refused (nobody accountable asked); with the payTo seller's key " +
      '(createAuthHeaders) it moves the price once, charged to that seller, with an attestation that names no ' +
      'resource; a replay is a duplicate',
    async () => {
      const payer = await buyer();
      const payTo = seller.wallet.publicKey();
      const payToBefore = Number(network.balance(payTo, 'USDC'));
      const req = requirements();
      const payload = await signedPayment(payer, req, `https://elsewhere.example.net/paid/${Date.now()}`);
      // Verify answers what settle would (issue #30): anonymous, the uncataloged URL is refused with its own reason.
      const anonymousVerify = await facilitator.verify(payload, req);
      expect(anonymousVerify).toMatchObject({
        isValid: false,
        invalidReason: 'settle_exact_stellar_seller_key_required',
      });
      const keyed = new HTTPFacilitatorClient({
        url: `${base}/x402`,
        createAuthHeaders: async () => ({
          verify: { Authorization: `Bearer ${seller.apiKey}` },
          settle: {},
          supported: {},
        }),
      });
      const verified = await keyed.verify(payload, req);
      expect(verified).toMatchObject({ isValid: true, payer: payer.publicKey() });
      // /x402/verify commits nothing (issue #29): no row lands in the seller's payment list.
      expect(verified.extensions).toBeUndefined();
      const rows = await svc.db.query('SELECT count(*)::int AS n FROM payment_attempts WHERE payer = :p', {
        replacements: { p: payer.publicKey() },
        plain: true,
      });
      expect(rows).toEqual({ n: 0 });

      const anonymous = await facilitator.settle(payload, req);
      expect(anonymous).toMatchObject({
        success: false,
        errorReason: 'settle_exact_stellar_seller_key_required',
        errorMessage: expect.stringMatching(/^UNAUTHORIZED: /),
        transaction: '',
      });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('3');

      const asSellerClient = new HTTPFacilitatorClient({
        url: `${base}/x402`,
        createAuthHeaders: async () => ({
          verify: {},
          settle: { Authorization: `Bearer ${seller.apiKey}` },
          supported: {},
        }),
      });
      const settled = await asSellerClient.settle(payload, req);
      expect(settled).toMatchObject({
        success: true,
        network: 'stellar:testnet',
        payer: payer.publicKey(),
        transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      const ours = (
        settled.extensions as { marketplace: { paymentAttemptId: string; receiptId: string; attestation?: string } }
      ).marketplace;
      const after = await request(svc.app).get(`/v1/payments/${ours.paymentAttemptId}`).set(bearer(OPERATOR_KEY));
      expect(after.body).toMatchObject({
        resourceId: null,
        sellerId: seller.id,
        status: 'settled',
        payer: payer.publicKey(),
      });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');
      expect(Number(network.balance(payTo, 'USDC'))).toBeCloseTo(payToBefore + 0.25, 7);
      const claims = JSON.parse(Buffer.from(ours.attestation!.split('.')[1], 'base64url').toString('utf8'));
      expect(claims).toEqual({
        kind: 'facilitator-attestation',
        version: 1,
        network: 'stellar:testnet',
        transaction: settled.transaction,
        ledger: expect.any(Number),
        asset: network.assets[0].contractId,
        amount: '2500000',
        payer: payer.publicKey(),
        payTo,
        issuedAt: expect.any(Number),
        // Fees the pubnet way (issue #30): what the settlement bid, attested.
        fees: {
          inclusion: expect.stringMatching(/^\d+$/),
          resource: expect.stringMatching(/^\d+$/),
          percentile: 'p90',
        },
      });

      const receipt = await request(svc.app).get(`/v1/receipts/${ours.receiptId}`).set(bearer(seller.apiKey));
      expect(receipt.status).toBe(200);
      expect(receipt.body).toMatchObject({
        id: ours.receiptId,
        resourceId: null,
        sellerId: seller.id,
        paymentAttemptId: ours.paymentAttemptId,
        attestation: ours.attestation,
      });
      const fees = await svc.db.query(
        'SELECT spent_stroops::text AS spent FROM seller_fee_days WHERE seller_id = :id',
        {
          replacements: { id: seller.id },
          plain: true,
        },
      );
      expect(Number((fees as { spent: string }).spent)).toBeGreaterThan(0);

      const again = await asSellerClient.settle(payload, req);
      expect(again).toMatchObject({ success: false, errorReason: 'duplicate_settlement', transaction: '' });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');
    },
  );

  it("refusals answer isValid false with the rule's reason, and an unproven failure records nothing", async () => {
    const payer = await buyer();
    const payload = await signedPayment(payer, requirements('2500000'), catalogedUrl);
    const wrongAmount = await facilitator.verify(payload, requirements('2600000'));
    expect(wrongAmount).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_stellar_payload_wrong_amount',
      invalidMessage: expect.stringMatching(/^AMOUNT_MISMATCH: /),
    });
    const otherAsset = await facilitator.verify(payload, {
      ...requirements(),
      asset: 'CAS3J7GYLGXMF6TDJBBYYSE3HQ6BBSMLNUQ34T6TZMYMW2EVH34XOWMA',
    });
    expect(otherAsset).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_stellar_payload_wrong_asset' });
    const otherNetwork = await facilitator.verify(payload, {
      ...requirements(),
      network: 'stellar:futurenet' as Requirements['network'],
    });
    expect(otherNetwork).toMatchObject({ isValid: false, invalidReason: 'invalid_network' });
    const garbage = await facilitator.verify({ ...payload, payload: { transaction: 'AAAA' } }, requirements());
    expect(garbage).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_stellar_payload_malformed' });
    // None of these proved the payer's signature on the ledger: nothing is written into the seller's payment list.
    const listed = await request(svc.app).get(`/v1/payments?status=verification_failed`).set(bearer(OPERATOR_KEY));
    expect(listed.body.items).not.toEqual(
      expect.arrayContaining([expect.objectContaining({ payer: payer.publicKey() })]),
    );
  });

  it('a body that is not the x402 shape answers 400 in the error envelope', async () => {
    const res = await request(svc.app)
      .post('/x402/verify')
      .send({ paymentPayload: { x402Version: 2 } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
  });

  it('publishes the receipt keys as public Ed25519 JWKs only', async () => {
    const res = await request(svc.app).get('/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(res.body.keys).toEqual([
      expect.objectContaining({
        kty: 'OKP',
        crv: 'Ed25519',
        alg: 'EdDSA',
        use: 'sig',
        kid: expect.any(String),
        x: expect.any(String),
      }),
    ]);
    expect(res.body.keys[0]).not.toHaveProperty('d');
  });
});

describe('the code -> x402 reason table', () => {
  it('is the one documented in the contract, row for row', () => {
    const doc = fs.readFileSync(path.resolve(__dirname, '../../../openapi/paths/x402_verify.yaml'), 'utf8');
    const documented: Record<string, string> = {};
    for (const line of doc.split('\n')) {
      const m = /^\s*\| ([A-Z_, ]+) \| ([a-z_]+) \|$/.exec(line);
      if (!m) continue;
      for (const code of m[1].split(',').map((c) => c.trim())) documented[code] = m[2];
    }
    expect(documented).toEqual(X402_REASONS);
    for (const code of Object.keys(X402_REASONS)) expect(ERROR_CODES).toContain(code);
    expect(x402Reason('SERVICE_UNAVAILABLE', 'verify')).toBe('unexpected_verify_error');
    expect(x402Reason(null, 'settle')).toBe('unexpected_settle_error');
  });
});
