/**
 * Executes the README's examples: each ```ts block of README.md appears verbatim (modulo indentation) below, run
 * against the real marketplace.
 */
import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, createReceiptKey, createReceiptSigner, ApiError, paywall } from '../src';
import { createBuyerClient } from '../../sdk-buyer/src';
import { readmeBlocks, normalize } from '../../test/support/readme';
import { listen, startMarketplace, type Marketplace } from '../../test/support/marketplace';

/** A second listing, for the payments key's refused catalog write. */
function catalogDraft(sellerId: string, payTo: string, assetIssuer: string) {
  return {
    type: 'http' as const,
    name: 'Forecast for a region',
    description: 'Hourly forecast for a region, paid per call',
    url: 'https://weather.example.com/v1/regions/{region}',
    routeTemplate: '/v1/regions/{region}',
    network: 'stellar:testnet' as const,
    payTo,
    assetCode: 'USDC',
    assetIssuer,
    amount: '0.01',
    inputSchema: { type: 'object', properties: { region: { type: 'string' } } },
    outputSchema: { type: 'object' },
  };
}

describe('README examples', () => {
  let m: Marketplace;
  const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);
  beforeAll(async () => {
    m = await startMarketplace();
  });
  afterAll(async () => {
    log.mockRestore();
    await m?.stop();
  });

  it('every ts block of README.md is in this file', () => {
    const self = normalize(fs.readFileSync(__filename, 'utf8'));
    const blocks = readmeBlocks(path.resolve(__dirname, '../README.md'));
    expect(blocks.length).toBe(4);
    for (const block of blocks) expect(self).toContain(block);
  });

  it('Sign up, register a resource, charge for a route with a payments key (a paid call settles; a catalog write is 403), rotate keys, errors', async () => {
    const baseUrl = m.baseUrl;
    const wallet = Keypair.random();
    const usdcIssuer = m.network.assets.find((a) => a.code === 'USDC')!.issuer;
    // The seller's wallet must exist and trust USDC to be paid (see "What a seller's wallet needs" in the root README).
    await m.network.fundAccount(wallet.publicKey());
    await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');

    const signup = createSellerClient({ baseUrl });
    const { seller: me, apiKey } = await signup.sellers.signUp({ displayName: 'Lisbon Weather', domain: 'weather.example.com', wallet }); // wallet: a Keypair, its S... secret or a WalletSigner
    const walletAddress = me.walletAddress;
    const seller = signup.withApiKey(apiKey); // the key is shown once: keep it secret
    const resource = await seller.resources.create({
      sellerId: me.id,
      type: 'http',
      name: 'Forecast',
      description: 'Hourly forecast for a city, paid per call',
      url: 'https://weather.example.com/v1/forecast/{city}',
      routeTemplate: '/v1/forecast/{city}',
      network: 'stellar:testnet',
      payTo: walletAddress,
      assetCode: 'USDC',
      assetIssuer: usdcIssuer,
      amount: '0.01',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      outputSchema: { type: 'object', properties: { temperatureC: { type: 'number' } } },
    });
    await seller.resources.update(resource.id, { amount: '0.02' });
    const versions = await seller.resources.iterateVersions(resource.id).toArray();
    expect(versions).toHaveLength(2);

    const receiptKey = await createReceiptKey(); // receiptKey.privateJwk stays secret, on the paywall host
    await seller.sellers.receiptKeys.publish(me.id, { keys: [receiptKey] }); // sends the public half and a proof of possession
    // The paywall host gets a payments-scoped key: it verifies, settles and reads this seller's payments, nothing else.
    const paymentsKey = await seller.keys.create(me.id, { name: 'paywall', scope: 'payments' }); // paymentsKey.secret is shown once
    const paywallClient = createSellerClient({ baseUrl, apiKey: paymentsKey.secret });
    const receiptSigner = await createReceiptSigner(receiptKey.privateJwk);
    const app = express();
    app.get('/v1/forecast/:city', paywall({ client: paywallClient, resourceId: resource.id, receiptSigner }), (req, res) => {
      res.json({ city: req.params.city, temperatureC: 21.5 });
    });
    expect(paymentsKey).toMatchObject({ name: 'paywall', scope: 'payments', secret: expect.stringMatching(/^mk_/) });
    expect(paymentsKey.secret).not.toBe(apiKey);

    const shop = await listen(app);
    const target = `http://127.0.0.1:${shop.port}/v1/forecast/Lisbon`;
    try {
      // Unpaid: 402 with the requirements.
      const res = await fetch(target);
      expect(res.status).toBe(402);
      expect(res.headers.get('payment-required')).toBeTruthy();

      // Least privilege, shown end to end: a real paid call through the paywall that holds only the payments key
      // is verified, settled on the local network, and its content is delivered...
      const payer = Keypair.random();
      await m.network.fundAccount(payer.publicKey());
      await m.network.faucet(payer.publicKey(), 'USDC', '1');
      const buyer = createBuyerClient({ baseUrl, payment: { signer: payer, budget: { perCall: '0.05' } } });
      const paid = await buyer.payAndFetch(target);
      expect(paid.response.status).toBe(200);
      expect(await paid.response.json()).toEqual({ city: 'Lisbon', temperatureC: 21.5 });
      expect(paid.paid).toBe(true);
      expect(paid.receipt).toMatchObject({ status: 'settled', transactionHash: expect.any(String), receiptId: expect.stringMatching(/^rcp_/) });
      expect(m.network.balance(payer.publicKey(), 'USDC')).toBe('0.98');
      expect(m.network.balance(walletAddress, 'USDC')).toBe('0.0200001');
      // ...the key reads its own seller's payments and receipts...
      expect(await paywallClient.receipts.get(paid.receipt!.receiptId!)).toMatchObject({ resourceId: resource.id, sellerId: me.id });
      // ...and the same key is refused a catalog write (and key management): 403 FORBIDDEN, nothing changed.
      const write = (await paywallClient.resources.update(resource.id, { amount: '0.0001' }).catch((e: unknown) => e)) as ApiError;
      expect(write).toBeInstanceOf(ApiError);
      expect(write).toMatchObject({ status: 403, code: 'FORBIDDEN' });
      const create = (await paywallClient.catalog.catalog({ sellerId: me.id, resource: { ...catalogDraft(me.id, walletAddress, usdcIssuer) } }).catch((e: unknown) => e)) as ApiError;
      expect(create).toMatchObject({ status: 403, code: 'FORBIDDEN' });
      expect(await paywallClient.keys.list(me.id).catch((e: unknown) => e)).toMatchObject({ status: 403, code: 'FORBIDDEN' });
      expect((await seller.resources.get(resource.id)).amount).toBe('0.02');

      // API keys: scopes and rotation.
      const keys = await seller.keys.list(me.id); // id, name, scope, prefix, expiresAt, lastUsedAt, revokedAt: never a secret
      // Rotation: create the new key (here expiring in 90 days), move the paywall host to it, then revoke the old one.
      const expiresAt = new Date(Date.now() + 90 * 24 * 3600 * 1000).toISOString();
      const nextKey = await seller.keys.create(me.id, { name: 'paywall 2', scope: 'payments', expiresAt }); // nextKey.secret is shown once
      const nextPaywallClient = createSellerClient({ baseUrl, apiKey: nextKey.secret });
      await seller.keys.revoke(me.id, paymentsKey.id); // the old key now answers 401 everywhere

      expect(keys.map((k) => [k.name, k.scope, k.revokedAt])).toEqual([
        ['paywall', 'payments', null],
        ['initial', 'admin', null],
      ]);
      expect(keys.find((k) => k.id === paymentsKey.id)?.prefix).toBe(paymentsKey.secret.slice(0, 11));
      expect(JSON.stringify(keys)).not.toContain(paymentsKey.secret);
      expect(nextKey).toMatchObject({ scope: 'payments', expiresAt: expect.any(String) });
      expect(await paywallClient.payments.list().catch((e: unknown) => e)).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      expect(await nextPaywallClient.receipts.get(paid.receipt!.receiptId!)).toMatchObject({ sellerId: me.id });
      const after = await seller.keys.list(me.id);
      expect(after.map((k) => [k.name, k.revokedAt === null])).toEqual([
        ['paywall 2', true],
        ['paywall', false],
        ['initial', true],
      ]);
    } finally {
      await shop.close();
    }

    try {
      await seller.resources.update('res_01JD6Z8V3K9Q2W7X4M5N6P8R0T', { amount: '1' });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      console.log(err.status, err.code); // 404 RESOURCE_NOT_FOUND
    }
    expect(log).toHaveBeenCalledWith(404, 'RESOURCE_NOT_FOUND');
  });
});
