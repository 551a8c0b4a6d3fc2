/**
 * paywall() in front of an Express route, against the real marketplace (verify/settle) and the local network.
 * Payloads are signed with the server's facilitator test helpers (ours and the x402 transaction form).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Keypair } from '@stellar/stellar-sdk';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  startFacilitatorEnv,
  type FacilitatorEnv,
} from '../../server/test/facilitator/helpers';
import { createSellerClient, paywall } from '../src';

/** paymentCase with an expiry inside the facilitator's window (maxTimeoutSeconds / ledger seconds + 2) unless set. */
const paymentWithin = (
  e: FacilitatorEnv,
  ...rest: Parameters<typeof paymentCase> extends [unknown, ...infer R] ? R : never
) => {
  const [b, to, amount, o = {}] = rest;
  return paymentCase(e, b, to, amount, { ...o, sign: { expiration: e.network.latestLedger() + 30, ...o.sign } });
};

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const unb64 = (v: string | null) => JSON.parse(Buffer.from(v as string, 'base64').toString('utf8'));

describe('paywall middleware', () => {
  let env: FacilitatorEnv;
  let api: Server;
  let shop: Server;
  let shopUrl: string;
  let buyer: Keypair;
  let payTo: string;
  let resourceId: string;
  const calls: string[] = [];

  beforeAll(async () => {
    env = await startFacilitatorEnv({ ledgerCloseMs: 100 });
    api = await new Promise<Server>((r) => {
      const s = env.svc.app.listen(0, '127.0.0.1', () => r(s));
    });
    const baseUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    const { seller, resource } = await sellerWithResource(env, '0.25');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
    buyer = await fundedBuyer(env, '10');
    const client = createSellerClient({ baseUrl, apiKey: seller.apiKey });

    const app = express();
    const pay = paywall({ client, resourceId });
    app.get('/ok/:city', pay, (req, res) => {
      calls.push(`ok:${req.params.city}`);
      res.json({ city: req.params.city, temperatureC: 20 });
    });
    app.get('/broken', pay, (_req, res) => {
      calls.push('broken');
      res.status(500).json({ error: 'upstream weather service down' });
    });
    app.get('/slow', pay, async (_req, res) => {
      calls.push('slow');
      await new Promise((r) => setTimeout(r, 800));
      res.json({ secret: 'paid content' });
    });
    shop = await new Promise<Server>((r) => {
      const s = app.listen(0, '127.0.0.1', () => r(s));
    });
    shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of [shop, api]) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
    await env.stop();
  });
  beforeEach(() => (calls.length = 0));

  it(
    'without payment: 402 with the requirements in ' + 'PAYMENT-REQUIRED and the body; the handler does not run',
    async () => {
      const res = await fetch(`${shopUrl}/ok/Lisbon`);
      expect(res.status).toBe(402);
      const header = unb64(res.headers.get('payment-required'));
      expect(header).toEqual(await res.json());
      expect(header).toMatchObject({
        x402Version: 2,
        error: 'PAYMENT_REQUIRED',
        resource: { url: `${shopUrl}/ok/Lisbon` },
        accepts: [
          {
            scheme: 'exact',
            network: 'stellar:testnet',
            amount: '2500000',
            asset: env.usdc.contractId,
            payTo,
            extra: { areFeesSponsored: true, asset: { code: 'USDC', issuer: env.usdc.issuer }, resourceId },
          },
        ],
      });
      expect(calls).toEqual([]);
    },
  );

  it('a header that is not a payment: 402 INVALID_PAYMENT_PAYLOAD, the handler does not run', async () => {
    const res = await fetch(`${shopUrl}/ok/Lisbon`, { headers: { 'PAYMENT-SIGNATURE': b64({ hello: 'world' }) } });
    expect(res.status).toBe(402);
    expect((await res.json()).error).toBe('INVALID_PAYMENT_PAYLOAD');
    expect(calls).toEqual([]);
  });

  it(
    'a payment signed by someone else fails verify before the ' + 'handler runs: 402 with the facilitator code',
    async () => {
      const other = await fundedBuyer(env, '1');
      const c = await paymentWithin(env, buyer, payTo, '0.25', { sign: { signer: other } });
      const res = await fetch(`${shopUrl}/ok/Lisbon`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      expect(res.status).toBe(402);
      const body = await res.json();
      expect(body.error).toMatchObject({ code: 'INVALID_SIGNATURE' });
      expect(calls).toEqual([]);
    },
  );

  it('when the handler fails (500), nothing is settled and its error goes out unpaid', async () => {
    const before = env.network.balance(buyer.publicKey(), 'USDC');
    const c = await paymentWithin(env, buyer, payTo, '0.25');
    const res = await fetch(`${shopUrl}/broken`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: 'upstream weather service down' });
    expect(res.headers.get('payment-response')).toBeNull();
    expect(calls).toEqual(['broken']);
    await new Promise((r) => setTimeout(r, 300));
    expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe(before);
  });

  it(
    'a valid payment: verified, handler runs, settled, PAYMENT-RESPONSE added, content released; accepts ' +
      'X-PAYMENT (v1) too',
    async () => {
      const before = env.network.balance(buyer.publicKey(), 'USDC');
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const res = await fetch(`${shopUrl}/ok/Porto`, { headers: { 'X-PAYMENT': b64(c.payload) } });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ city: 'Porto', temperatureC: 20 });
      expect(unb64(res.headers.get('payment-response'))).toMatchObject({
        success: true,
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        receiptId: expect.stringMatching(/^rcp_/),
        network: 'stellar:testnet',
        payer: buyer.publicKey(),
      });
      expect(Number(before) - Number(env.network.balance(buyer.publicKey(), 'USDC'))).toBeCloseTo(0.25, 7);
    },
  );

  it('the stock x402 payload ({ payload: { transaction } }) is translated and settled', async () => {
    const c = await paymentWithin(env, buyer, payTo, '0.25', { format: 'transaction' });
    const x402 = {
      x402Version: 2,
      accepted: { scheme: 'exact', network: 'stellar:testnet', amount: '2500000', asset: env.usdc.contractId, payTo },
      payload: { transaction: c.payload.authorization.xdr },
    };
    const res = await fetch(`${shopUrl}/ok/Faro`, { headers: { 'PAYMENT-SIGNATURE': b64(x402) } });
    expect(res.status).toBe(200);
    expect(unb64(res.headers.get('payment-response'))).toMatchObject({ success: true, payer: buyer.publicKey() });
  });

  it('when settlement fails after the handler ran, the paid content is never released', async () => {
    // Valid for 3 ledgers (~300 ms): verify passes, the handler takes 800 ms, settle finds it expired.
    const c = await paymentWithin(env, buyer, payTo, '0.25', { sign: { expiration: env.network.latestLedger() + 3 } });
    const res = await fetch(`${shopUrl}/slow`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
    const text = await res.text();
    expect(calls).toEqual(['slow']);
    expect(res.status).toBe(402);
    expect(text).not.toContain('paid content');
    expect(JSON.parse(text).error).toMatchObject({ code: 'AUTH_EXPIRED' });
    expect(res.headers.get('payment-response')).toBeNull();
  });

  it(
    'when 12 requests carry one payment signature to a slow paid route, exactly one is served (200), the others ' +
      'get 409 REPLAY_DETECTED, the handler runs once and the money moves once',
    async () => {
      const payer = await fundedBuyer(env, '1');
      const c = await paymentWithin(env, payer, payTo, '0.25');
      const header = b64(c.payload);
      const answers = await Promise.all(
        Array.from({ length: 12 }, async () => {
          const res = await fetch(`${shopUrl}/slow`, { headers: { 'PAYMENT-SIGNATURE': header } });
          return { status: res.status, text: await res.text() };
        }),
      );
      const served = answers.filter((a) => a.status === 200);
      expect(served).toHaveLength(1);
      expect(served[0].text).toContain('paid content');
      const refused = answers.filter((a) => a.status !== 200);
      expect(refused).toHaveLength(11);
      for (const r of refused) {
        expect(r.status).toBe(409);
        expect(r.text).not.toContain('paid content');
        expect(JSON.parse(r.text).error).toMatchObject({ code: 'REPLAY_DETECTED' });
      }
      expect(calls).toEqual(['slow']);
      expect(env.network.balance(payer.publicKey(), 'USDC')).toBe('0.75');
      // The same payment sent again later is refused before the handler runs.
      const later = await fetch(`${shopUrl}/slow`, { headers: { 'PAYMENT-SIGNATURE': header } });
      expect(later.status).toBe(409);
      expect(calls).toEqual(['slow']);
    },
  );
});
