/**
 * x402 payment flows on /x402 (issue #30), against the real service, database and local network (local simulation):
 * /x402/supported declares the flows it settles (`extra.paymentFlows`), requirements naming another flow are refused
 * by rule protocol.payment_flow_supported (x402 reason `unsupported_payment_flow`) on verify and settle with nothing
 * moved, `upfront` verifies and settles like `authorization`, and a valid /x402/verify commits nothing: every table
 * has the same rows, with the same contents, before and after.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { QueryTypes } from 'sequelize';
import { Keypair } from '@stellar/stellar-sdk';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme as ExactStellarClient } from '@x402/stellar/exact/client';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { RULES } from '../../src/domain/facilitator/rules/catalog';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { httpsRpcFront } from '../../../test/support/marketplace';

interface Requirements {
  scheme: string;
  network: string;
  asset: string;
  amount: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

describe('x402 payment flows', () => {
  let network: LocalNetwork;
  let svc: TestService;
  let server: http.Server;
  let front: { rpcUrl: string; close(): Promise<void> };
  let seller: SignedUpSeller;
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
    expect((server.address() as AddressInfo).port).toBeGreaterThan(0);
    front = await httpsRpcFront(network);
    seller = await signUpSeller(svc.app);
    await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
    const created = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send(resourceInput(seller, { assetIssuer: network.assets[0].issuer, amount: '0.25' }));
    expect(created.status).toBe(201);
    catalogedUrl = `https://${seller.domain}/v1/forecast/porto`;
  });

  afterAll(async () => {
    await front?.close();
    await new Promise((r) => server?.close(r));
    server?.closeAllConnections();
    await svc?.stop();
    await network?.stop();
  });

  function requirements(extra: Record<string, unknown> = {}): Requirements {
    return {
      scheme: 'exact',
      network: 'stellar:testnet',
      asset: network.assets[0].contractId,
      amount: '2500000',
      payTo: seller.wallet.publicKey(),
      maxTimeoutSeconds: 300,
      extra: { areFeesSponsored: true, ...extra },
    };
  }

  /** A payment signed by the stock @x402/stellar client for `req`, naming the cataloged URL (no seller key needed). */
  async function signedPayment(payer: Keypair, req: Requirements) {
    const client = new ExactStellarClient(createEd25519Signer(payer.secret(), 'stellar:testnet'), {
      url: front.rpcUrl,
    });
    const created = await client.createPaymentPayload(2, req as never);
    return {
      ...created,
      accepted: req,
      resource: { url: catalogedUrl, description: '', mimeType: 'application/json' },
    };
  }

  async function buyer(): Promise<Keypair> {
    const k = Keypair.random();
    await network.faucet(k.publicKey(), 'USDC', '3');
    return k;
  }

  /** Every table of the schema: its row count and a fingerprint of its contents. */
  async function everyTable(): Promise<Record<string, { rows: number; md5: string | null }>> {
    const tables = await svc.db.query<{ name: string }>(
      'SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = ' +
        "current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
      { type: QueryTypes.SELECT },
    );
    const out: Record<string, { rows: number; md5: string | null }> = {};
    for (const { name } of tables) {
      const [row] = await svc.db.query<{ rows: number; md5: string | null }>(
        `SELECT count(*)::int AS rows, md5(string_agg(t::text, '|' ORDER BY t::text)) AS md5 FROM ${name} t`,
        { type: QueryTypes.SELECT },
      );
      out[name] = row;
    }
    return out;
  }

  it(
    '/x402/supported declares the flows each kind settles: authorization and upfront; /.well-known/x402 says the ' +
      'same',
    async () => {
      const supported = await request(svc.app).get('/x402/supported');
      expect(supported.status).toBe(200);
      for (const kind of supported.body.kinds)
        expect(kind.extra).toMatchObject({ paymentFlows: ['authorization', 'upfront'] });
      const described = await request(svc.app).get('/.well-known/x402');
      expect(described.body.kinds).toEqual(supported.body.kinds);
    },
  );

  it(
    'a valid /x402/verify commits nothing: every table has the same rows and contents before and after (default ' +
      'and upfront flows)',
    async () => {
      const payer = await buyer();
      const before = await everyTable();
      expect(Object.keys(before)).toEqual(expect.arrayContaining(['payment_attempts', 'settlements', 'receipts']));
      for (const req of [
        requirements(),
        requirements({ paymentFlow: 'authorization' }),
        requirements({ paymentFlow: 'upfront' }),
      ]) {
        const res = await request(svc.app)
          .post('/x402/verify')
          .send({ x402Version: 2, paymentPayload: await signedPayment(payer, req), paymentRequirements: req });
        expect(res.body).toMatchObject({ isValid: true, payer: payer.publicKey() });
      }
      expect(await everyTable()).toEqual(before);
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('3');
    },
  );

  it.each([
    ['escrow', /escrow.*no escrow contract/],
    ['instant', /not an x402 payment flow/],
  ])(
    'attack: requirements asking for the %s flow are refused on verify and settle with ' +
      'unsupported_payment_flow; nothing moves, nothing is recorded',
    async (flow, message) => {
      const payer = await buyer();
      const req = requirements({ paymentFlow: flow });
      const payload = await signedPayment(payer, req);
      const before = await everyTable();
      const verified = await request(svc.app)
        .post('/x402/verify')
        .send({ x402Version: 2, paymentPayload: payload, paymentRequirements: req });
      expect(verified.body).toMatchObject({
        isValid: false,
        invalidReason: RULES.paymentFlowSupported.x402Reason,
        invalidMessage: expect.stringMatching(message),
      });
      expect(RULES.paymentFlowSupported.x402Reason).toBe('unsupported_payment_flow');
      const settled = await request(svc.app)
        .post('/x402/settle')
        .set(bearer(seller.apiKey))
        .send({ x402Version: 2, paymentPayload: payload, paymentRequirements: req });
      expect(settled.body).toMatchObject({
        success: false,
        errorReason: 'unsupported_payment_flow',
        errorMessage: expect.stringMatching(/^INVALID_REQUEST: /),
        transaction: '',
      });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('3');
      expect(await everyTable()).toEqual(before);
    },
  );

  it(
    'attack: a payload that accepted the upfront flow for requirements of the authorization flow is refused by ' +
      'the same rule',
    async () => {
      const payer = await buyer();
      const req = requirements();
      const payload = { ...(await signedPayment(payer, req)), accepted: requirements({ paymentFlow: 'upfront' }) };
      const verified = await request(svc.app)
        .post('/x402/verify')
        .send({ x402Version: 2, paymentPayload: payload, paymentRequirements: req });
      expect(verified.body).toMatchObject({ isValid: false, invalidReason: 'unsupported_payment_flow' });
    },
  );

  it(
    'the upfront flow settles once like the authorization flow ' + '(the resource server calls settle without verify)',
    async () => {
      const payer = await buyer();
      const req = requirements({ paymentFlow: 'upfront' });
      const payload = await signedPayment(payer, req);
      const settled = await request(svc.app)
        .post('/x402/settle')
        .send({ x402Version: 2, paymentPayload: payload, paymentRequirements: req });
      expect(settled.body).toMatchObject({
        success: true,
        payer: payer.publicKey(),
        transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');
      const again = await request(svc.app)
        .post('/x402/settle')
        .send({ x402Version: 2, paymentPayload: payload, paymentRequirements: req });
      expect(again.body).toMatchObject({ success: false, errorReason: 'duplicate_settlement' });
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('2.75');
    },
  );
});
