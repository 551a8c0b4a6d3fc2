/**
 * x402 extensions on /x402/verify and /x402/settle (issue #30), against the real service, database and local network
 * (local simulation): the payment-identifier extension (coinbase/x402 specs/extensions/payment_identifier.md) and the
 * EXTENSION-RESPONSES header (specs/extensions/bazaar.md). Payloads are signed by the stock @x402/stellar client.
 */
import http from 'node:http';
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import type { HTTPFacilitatorClient } from '@x402/core/server';
import { encodePaymentResponseHeader } from '@x402/core/http';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme as ExactStellarClient } from '@x402/stellar/exact/client';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { httpsRpcFront } from '../../../test/support/marketplace';
import { createPaymentIdentifiers, type PaymentIdentifierKey } from '../../src/domain/facilitator/payment-identifier';
import { createPaymentIdentifierRepository } from '../../src/data/payment-identifier-repository';

type Requirements = Parameters<HTTPFacilitatorClient['verify']>[1];
type Payload = Parameters<HTTPFacilitatorClient['verify']>[0];

const ID_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { required: { type: 'boolean' }, id: { type: 'string', minLength: 16, maxLength: 128 } },
  required: ['required'],
};
const withId = (id: string | undefined, required = false) => ({
  'payment-identifier': { schema: ID_SCHEMA, info: { required, ...(id ? { id } : {}) } },
});
const newId = () => `pay_${Keypair.random().publicKey().slice(1, 33).toLowerCase()}`;
const decodeHeader = (h: string | undefined) => (h ? JSON.parse(Buffer.from(h, 'base64').toString('utf8')) : undefined);

describe('x402 payment-identifier and EXTENSION-RESPONSES', () => {
  let network: LocalNetwork;
  let svc: TestService;
  let server: http.Server;
  let front: { rpcUrl: string; close(): Promise<void> };
  let seller: SignedUpSeller;
  let other: SignedUpSeller;
  let catalogedUrl: string;

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
    front = await httpsRpcFront(network);
    seller = await signUpSeller(svc.app);
    other = await signUpSeller(svc.app);
    await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
    const created = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { assetIssuer: network.assets[0].issuer, amount: '0.25' }));
    expect(created.status).toBe(201);
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

  async function signed(
    payer: Keypair,
    req: Requirements,
    extensions: Record<string, unknown>,
    url = catalogedUrl,
  ): Promise<Payload> {
    const client = new ExactStellarClient(createEd25519Signer(payer.secret(), 'stellar:testnet'), {
      url: front.rpcUrl,
    });
    const created = await client.createPaymentPayload(2, req);
    return {
      ...created,
      accepted: req,
      resource: { url, description: '', mimeType: 'application/json' },
      extensions,
    } as Payload;
  }

  async function buyer(usdc = '3'): Promise<Keypair> {
    const k = Keypair.random();
    await network.faucet(k.publicKey(), 'USDC', usdc);
    return k;
  }

  const post = (op: 'verify' | 'settle', paymentPayload: Payload, paymentRequirements: Requirements, key?: string) => {
    const r = request(svc.app).post(`/x402/${op}`);
    if (key) r.set(bearer(key));
    return r.send({ x402Version: 2, paymentPayload, paymentRequirements });
  };
  const attempts = async (payer: Keypair) =>
    (
      (await svc.db.query('SELECT count(*)::int AS n FROM payment_attempts WHERE payer = :p', {
        replacements: { p: payer.publicKey() },
        plain: true,
      })) as { n: number }
    ).n;

  it('advertises payment-identifier beside bazaar in /x402/supported', async () => {
    const res = await request(svc.app).get('/x402/supported');
    expect(res.body.extensions).toEqual(['bazaar', 'payment-identifier']);
  });

  it(
    'same id and payload settled again: the stored answer, byte for byte (same transaction, receipt, ' +
      'attestation, PAYMENT-RESPONSE), and the money moved once',
    async () => {
      const payer = await buyer();
      const req = requirements();
      const payload = await signed(payer, req, withId(newId()));
      const first = await post('settle', payload, req, seller.apiKey);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({
        success: true,
        transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
        amount: '2500000',
        extra: { ledger: expect.any(Number) },
      });
      const again = await post('settle', payload, req, seller.apiKey);
      expect(again.status).toBe(200);
      expect(again.text).toBe(first.text);
      expect(encodePaymentResponseHeader(again.body)).toBe(encodePaymentResponseHeader(first.body));
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');
      expect(await attempts(payer)).toBe(1);
    },
  );

  it(
    'same id, another payload of the same payer: 409 CONFLICT before anything is verified (even a payload verify ' +
      'would refuse), nothing recorded or moved',
    async () => {
      const id = newId();
      const req = requirements();
      const payer = await buyer();
      const answered = await post('settle', await signed(payer, req, withId(id)), req, seller.apiKey);
      expect(answered.body.success).toBe(true);
      const otherPayload = await signed(payer, req, withId(id));
      const conflict = await post('settle', otherPayload, req, seller.apiKey);
      expect(conflict.status).toBe(409);
      expect(conflict.body).toMatchObject({ ok: false, error: { code: 'CONFLICT', requestId: expect.any(String) } });
      // Looked up before verifying: a payload signed for another amount (verify would refuse it) still answers the
      // conflict.
      const wrongAmount = await signed(payer, requirements('1000000'), withId(id));
      const refusedFirst = await post('verify', wrongAmount, req, seller.apiKey);
      expect(refusedFirst.body).toMatchObject({ isValid: false });
      expect((await post('settle', wrongAmount, req, seller.apiKey)).status).toBe(409);
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');
      expect(await attempts(payer)).toBe(1);
    },
  );

  it('same id and payload with other terms (another amount): 409 CONFLICT', async () => {
    const payer = await buyer();
    const req = requirements();
    const payload = await signed(payer, req, withId(newId()));
    expect((await post('verify', payload, req, seller.apiKey)).body.isValid).toBe(true);
    const conflict = await post('verify', payload, requirements('2500001'), seller.apiKey);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('CONFLICT');
  });

  it(
    'required: true without an id answers 400 INVALID_REQUEST, ' + 'and a malformed id 400 too; nothing is verified',
    async () => {
      const payer = await buyer();
      const req = requirements();
      const missing = await post('settle', await signed(payer, req, withId(undefined, true)), req, seller.apiKey);
      expect(missing.status).toBe(400);
      expect(missing.body).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
      const short = await post('verify', await signed(payer, req, withId('too-short')), req, seller.apiKey);
      expect(short.status).toBe(400);
      expect(await attempts(payer)).toBe(0);
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('3');
    },
  );

  it(
    "one party cannot read another's stored answer: another seller's key with the same id and payload gets its " +
      'own answer (a duplicate), not the stored success',
    async () => {
      const payer = await buyer();
      const req = requirements();
      const payload = await signed(payer, req, withId(newId()));
      const mine = await post('settle', payload, req, seller.apiKey);
      expect(mine.body.success).toBe(true);
      const theirs = await post('settle', payload, req, other.apiKey);
      expect(theirs.body).toMatchObject({ success: false, errorReason: 'duplicate_settlement', transaction: '' });
      const anonymous = await post('settle', payload, req);
      expect(anonymous.body).toMatchObject({ success: false, errorReason: 'duplicate_settlement' });
      const rows = (await svc.db.query(
        'SELECT count(*)::int AS n FROM x402_payment_identifiers WHERE payment_id = :id',
        {
          replacements: { id: (payload.extensions as ReturnType<typeof withId>)['payment-identifier'].info.id },
          plain: true,
        },
      )) as { n: number };
      expect(rows.n).toBe(1);
    },
  );

  it(
    "refusals are not stored: the same id and payload is processed again (refused while the payer's trustline is " +
      'frozen, valid once it is not)',
    async () => {
      const payer = await buyer();
      const req = requirements();
      const payload = await signed(payer, req, withId(newId()));
      await network.setTrustlineAuthorized(payer.publicKey(), 'USDC', false);
      const frozen = await post('verify', payload, req, seller.apiKey);
      await network.setTrustlineAuthorized(payer.publicKey(), 'USDC', true);
      expect(frozen.body).toMatchObject({ isValid: false });
      const thawed = await post('verify', payload, req, seller.apiKey);
      expect(thawed.body).toMatchObject({ isValid: true });
    },
  );

  it(
    'EXTENSION-RESPONSES: verify says bazaar processing for valid discovery info and rejected with ' +
      "rejectedReason for invalid; settle says rejected with the reason while the seller's domain is unverified " +
      'and success once the URL is learned; no header without the extension',
    async () => {
      const payer = await buyer();
      const req = requirements();
      const bazaar = {
        info: { input: { type: 'http', method: 'GET' } },
        schema: { type: 'object', properties: { input: { type: 'object' } }, required: ['input'] },
      };
      const payload = await signed(payer, req, { bazaar });
      const verified = await post('verify', payload, req, seller.apiKey);
      expect(decodeHeader(verified.headers['extension-responses'])).toEqual({ bazaar: { status: 'processing' } });
      expect(verified.body.extensions).toEqual({ bazaar: { status: 'processing' } });
      const invalid = await post(
        'verify',
        await signed(payer, req, { bazaar: { info: { input: { type: 'ftp' } }, schema: bazaar.schema } }),
        req,
        seller.apiKey,
      );
      expect(decodeHeader(invalid.headers['extension-responses'])).toEqual({
        bazaar: { status: 'rejected', rejectedReason: expect.stringContaining('info.input.type') },
      });
      // The seller's domain is not verified yet: the payment settles, the Bazaar refuses to learn the URL, and says
      // why.
      const refused = await post('settle', payload, req, seller.apiKey);
      expect(refused.body.success).toBe(true);
      expect(decodeHeader(refused.headers['extension-responses'])).toEqual({
        bazaar: { status: 'rejected', rejectedReason: expect.stringContaining('is not verified') },
      });
      await svc.db.query(`UPDATE sellers SET domain_verified_at = now() WHERE id = '${seller.id}'`);
      const learned = await post(
        'settle',
        await signed(payer, req, { bazaar }, `https://${seller.domain}/v1/learned/${Date.now()}`),
        req,
        seller.apiKey,
      );
      expect(learned.body.success).toBe(true);
      expect(decodeHeader(learned.headers['extension-responses'])).toEqual({ bazaar: { status: 'success' } });
      expect(learned.body.extensions.bazaar).toEqual({ status: 'success' });
      const plain = await post('verify', await signed(await buyer(), req, {}), req, seller.apiKey);
      expect(plain.body.isValid).toBe(true);
      expect(plain.headers['extension-responses']).toBeUndefined();
    },
  );

  it(
    'bounded per scope: a scope keeps its newest records up to the bound (the oldest go), other scopes ' +
      'untouched; an expired record is not answered and a new answer replaces it',
    async () => {
      const store = createPaymentIdentifierRepository(svc.db);
      const bounded = createPaymentIdentifiers({ store, maxPerScope: 3 });
      const key = (scope: string, n: number): PaymentIdentifierKey => ({
        scope,
        id: `pay_bound_test_${String(n).padStart(4, '0')}`,
        operation: 'settle',
        fingerprint: 'f',
        payloadHash: `h${n}`,
      });
      const answer = (n: number) => ({ status: 200, body: { success: true, n }, headers: {} });
      await bounded.remember(key('seller:s_other|payer:P', 1), answer(1));
      for (let n = 1; n <= 5; n++) await bounded.remember(key('seller:s_flood|payer:P', n), answer(n));
      const kept = (await svc.db.query(
        `SELECT payment_id FROM x402_payment_identifiers WHERE scope = 'seller:s_flood|payer:P' ORDER BY payment_id`,
        { type: 'SELECT' },
      )) as Array<{ payment_id: string }>;
      expect(kept.map((r) => r.payment_id)).toEqual([key('x', 3).id, key('x', 4).id, key('x', 5).id]);
      expect(await bounded.lookup(key('seller:s_flood|payer:P', 1))).toBeNull();
      expect(await bounded.lookup(key('seller:s_other|payer:P', 1))).toEqual(answer(1));

      const expired = createPaymentIdentifiers({ store, ttlSeconds: 0 });
      expect(await expired.lookup(key('seller:s_other|payer:P', 1))).toBeNull();
      await expired.remember({ ...key('seller:s_other|payer:P', 1), payloadHash: 'other' }, answer(9));
      expect(await bounded.lookup({ ...key('seller:s_other|payer:P', 1), payloadHash: 'other' })).toEqual(answer(9));
    },
  );
});
