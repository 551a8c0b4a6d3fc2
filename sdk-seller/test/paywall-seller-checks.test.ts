/**
 * Issue 32: the paywall says what is wrong on the side that can fix it.
 * - A mistyped (or foreign, or revoked) payments key fails loudly at the seller when the paywall starts, and buyers
 *   are told "the seller is misconfigured" (503, nothing to sign), never "The API key is malformed".
 * - A refused transfer for a missing trustline names whose wallet lacks it: the seller's (cannot receive) or the
 *   buyer's.
 */
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, paywall, PaywallConfigurationError, type SellerClient } from '../src';
import { createBuyerClient } from '../../sdk-buyer/src';
import { listen, startMarketplace, type Marketplace } from '../../test/support/marketplace';

describe('paywall seller checks', () => {
  let m: Marketplace;
  let usdcIssuer: string;
  beforeAll(async () => {
    m = await startMarketplace();
    usdcIssuer = m.network.assets.find((a) => a.code === 'USDC')!.issuer;
  });
  afterAll(async () => {
    await m?.stop();
  });

  /** A signed-up seller and a created resource; `trustline: false` leaves the wallet unable to receive USDC. */
  async function sellerWithResource(
    name: string,
    trustline = true,
  ): Promise<{ admin: SellerClient; sellerId: string; resourceId: string; wallet: Keypair }> {
    const wallet = Keypair.random();
    await m.network.fundAccount(wallet.publicKey());
    if (trustline) await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    const { seller: me, apiKey } = await signup.sellers.signUp({
      displayName: name,
      domain: `${name}.example.com`,
      wallet,
    });
    const admin = signup.withApiKey(apiKey);
    const resource = await admin.resources.create({
      sellerId: me.id,
      type: 'http',
      name: 'Forecast',
      description: 'Hourly forecast, paid per call',
      url: `https://${name}.example.com/v1/forecast/{city}`,
      routeTemplate: '/v1/forecast/{city}',
      network: 'stellar:testnet',
      payTo: wallet.publicKey(),
      assetCode: 'USDC',
      assetIssuer: usdcIssuer,
      amount: '0.01',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object' },
    });
    return { admin, sellerId: me.id, resourceId: resource.id, wallet };
  }

  async function shopWith(pay: ReturnType<typeof paywall>) {
    const app = express();
    let served = 0;
    app.get('/v1/forecast/:city', pay, (_req, res) => {
      served += 1;
      res.json({ ok: true });
    });
    const shop = await listen(app);
    return { url: `http://127.0.0.1:${shop.port}/v1/forecast/Porto`, served: () => served, close: shop.close };
  }

  async function payer(usdc: string | null) {
    const key = Keypair.random();
    await m.network.fundAccount(key.publicKey());
    if (usdc) await m.network.faucet(key.publicKey(), 'USDC', usdc);
    return createBuyerClient({ baseUrl: m.baseUrl, payment: { signer: key, budget: { perCall: '0.05' } } });
  }

  it(
    'mistyped payments key: ready() rejects at the seller, the seller is told once, buyers get 503 "the seller ' +
      'is misconfigured" and nothing to sign',
    async () => {
      const { resourceId } = await sellerWithResource('typo-shop');
      const told: string[] = [];
      const pay = paywall({
        client: createSellerClient({ baseUrl: m.baseUrl, apiKey: 'mk_this-key-was-mistyped-by-the-seller-0000000000' }),
        resourceId,
        onMisconfigured: (msg) => told.push(msg),
      });
      await expect(pay.ready()).rejects.toBeInstanceOf(PaywallConfigurationError);
      expect(told).toHaveLength(1);
      expect(told[0]).toMatch(/refused this paywall's API key \(401 UNAUTHORIZED/);
      const shop = await shopWith(pay);
      try {
        const unpaid = await fetch(shop.url);
        expect(unpaid.status).toBe(503);
        expect(unpaid.headers.get('payment-required')).toBeNull();
        const body = await unpaid.json();
        expect(body.error.message).toMatch(/^The seller is misconfigured/);
        expect(JSON.stringify(body)).not.toMatch(/API key is malformed/i);
        const paid = await (await payer('1')).payAndFetch(shop.url);
        expect(paid.paid).toBe(false);
        expect(paid.response.status).toBe(503);
        expect(shop.served()).toBe(0);
        expect(told).toHaveLength(1); // said once, not per request
      } finally {
        await shop.close();
      }
    },
  );

  it(
    'a key of another seller is refused the same way (403), and ' + 'a valid payments key makes ready() resolve',
    async () => {
      const mine = await sellerWithResource('own-shop');
      const other = await sellerWithResource('other-shop');
      const otherKey = await other.admin.keys.create(other.sellerId, { name: 'paywall', scope: 'payments' });
      const wrong = paywall({
        client: createSellerClient({ baseUrl: m.baseUrl, apiKey: otherKey.secret }),
        resourceId: mine.resourceId,
        onMisconfigured: () => undefined,
      });
      await expect(wrong.ready()).rejects.toThrow(/403 FORBIDDEN/);
      const myKey = await mine.admin.keys.create(mine.sellerId, { name: 'paywall', scope: 'payments' });
      const right = paywall({
        client: createSellerClient({ baseUrl: m.baseUrl, apiKey: myKey.secret }),
        resourceId: mine.resourceId,
        onMisconfigured: () => undefined,
      });
      await expect(right.ready()).resolves.toBeUndefined();
    },
  );

  it(
    'missing trustline on the seller side: the buyer reads "the seller\'s wallet cannot receive USDC", the ' +
      'seller is warned',
    async () => {
      const seller = await sellerWithResource('no-trust-shop', false);
      const key = await seller.admin.keys.create(seller.sellerId, { name: 'paywall', scope: 'payments' });
      const told: string[] = [];
      const shop = await shopWith(
        paywall({
          client: createSellerClient({ baseUrl: m.baseUrl, apiKey: key.secret }),
          resourceId: seller.resourceId,
          onMisconfigured: (msg) => told.push(msg),
        }),
      );
      try {
        const paid = await (await payer('1')).payAndFetch(shop.url).catch((e: unknown) => e as Error);
        const text = paid instanceof Error ? paid.message : JSON.stringify(await paid.response.json());
        expect(text).toContain("The seller's wallet cannot receive USDC");
        expect(told.join('\n')).toContain(seller.wallet.publicKey());
        expect(shop.served()).toBe(0);
      } finally {
        await shop.close();
      }
    },
  );

  it('missing trustline on the buyer side: the buyer reads "your wallet has no USDC trustline"', async () => {
    const seller = await sellerWithResource('trust-shop');
    const key = await seller.admin.keys.create(seller.sellerId, { name: 'paywall', scope: 'payments' });
    const shop = await shopWith(
      paywall({
        client: createSellerClient({ baseUrl: m.baseUrl, apiKey: key.secret }),
        resourceId: seller.resourceId,
        onMisconfigured: () => undefined,
      }),
    );
    try {
      const paid = await (await payer(null)).payAndFetch(shop.url).catch((e: unknown) => e as Error);
      const text = paid instanceof Error ? paid.message : JSON.stringify(await paid.response.json());
      expect(text).toContain('Your wallet has no USDC trustline');
      expect(shop.served()).toBe(0);
    } finally {
      await shop.close();
    }
  });
});
