/**
 * The Bazaar learns from settled payments (issue #21): a stock `@x402/express` app whose route declares the stock
 * `bazaar` discovery extension (`declareDiscoveryExtension` + `bazaarResourceServerExtension`) and points its
 * stock `HTTPFacilitatorClient` at our `/x402` — with the seller's API key through `createAuthHeaders`, since the
 * URL is not cataloged (issue #18: an uncataloged settle needs the payTo seller's key, and the payTo must be a
 * signed-up seller's wallet) — is paid by a stock `@x402/fetch` buyer on the local network (local simulation).
 * After the settled payment, the stock Bazaar client (`withBazaar(...).extensions.discovery.listResources()`) finds
 * the resource, labelled observed, linked to the seller, with its usage; paging is clamped, never refused. The seller
 * has verified its domain: the Bazaar learns only on proven hosts (issue #29).
 */
import { Keypair } from '@stellar/stellar-sdk';
import express from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactStellarScheme as ExactStellarServer } from '@x402/stellar/exact/server';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import { bazaarResourceServerExtension, declareDiscoveryExtension, withBazaar } from '@x402/extensions/bazaar';
import { adaptStellarClientScheme, adaptStellarServerScheme, createSellerClient } from '../../sdk-seller/src';
import { httpsRpcFront, listen, loopbackFetch, startMarketplace, type Marketplace } from '../support/marketplace';

describe("the Bazaar learns from a stock @x402/express seller's settled payments", () => {
  let m: Marketplace;
  let front: { rpcUrl: string; close(): Promise<void> };
  let shop: { close(): Promise<void> };
  let wallet: Keypair;
  let sellerId: string;
  let url: string;

  beforeAll(async () => {
    m = await startMarketplace();
    front = await httpsRpcFront(m.network);
    wallet = Keypair.random();
    await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');

    // The seller signs up first: its wallet is the payTo, its key authorises settling an uncataloged URL.
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    const { seller, apiKey } = await signup.sellers.signUp({
      displayName: 'Learning Shop',
      domain: 'learning-shop.test',
      wallet,
    });
    sellerId = seller.id;
    // Issue #29: the Bazaar learns only on a host the paid seller has proven. The domain check itself is tested in
    // server/test/api/verify-domain.test.ts; here the seller is marked verified as that check would.
    await m.service.db.query(`UPDATE sellers SET domain_verified_at = now() WHERE id = '${sellerId}'`);

    const facilitator = new HTTPFacilitatorClient({
      url: `${m.baseUrl}/x402`,
      createAuthHeaders: async () => ({
        verify: { Authorization: `Bearer ${apiKey}` },
        settle: { Authorization: `Bearer ${apiKey}` },
        supported: {},
      }),
    });
    const server = new x402ResourceServer(facilitator)
      .register('stellar:testnet', adaptStellarServerScheme(new ExactStellarServer()))
      .registerExtension(bazaarResourceServerExtension);
    const app = express();
    const started = await listen(app);
    shop = started;
    url = `http://learning-shop.test:${started.port}/v1/tides/porto`;
    app.use(
      paymentMiddleware(
        {
          'GET /v1/tides/porto': {
            accepts: { scheme: 'exact', price: '$0.01', network: 'stellar:testnet', payTo: wallet.publicKey() },
            resource: url,
            description: 'Tide times for Porto harbour',
            extensions: {
              ...declareDiscoveryExtension({
                input: { days: '2' },
                inputSchema: { properties: { days: { type: 'string' } }, required: ['days'] },
                output: { example: { harbour: 'Porto', highTides: ['06:12', '18:40'] } },
              }),
            },
          },
        },
        server,
      ),
    );
    app.get('/v1/tides/porto', (_req, res) => {
      res.json({ harbour: 'Porto', highTides: ['06:12', '18:40'] });
    });
  });

  afterAll(async () => {
    await shop?.close();
    await front?.close();
    await m?.stop();
  });

  it(
    'when two buyers pay the uncataloged URL, it is listed as an observed resource of that seller with 2 calls ' +
      'from 2 unique payers',
    async () => {
      for (const _ of [1, 2]) {
        const buyer = Keypair.random();
        await m.network.faucet(buyer.publicKey(), 'USDC', '1');
        const client = new x402Client().register(
          'stellar:testnet',
          adaptStellarClientScheme(
            new ExactStellarScheme(createEd25519Signer(buyer.secret(), 'stellar:testnet'), { url: front.rpcUrl }),
          ),
        );
        const response = await wrapFetchWithPayment(loopbackFetch as typeof fetch, client)(`${url}?days=2`);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ harbour: 'Porto', highTides: ['06:12', '18:40'] });
      }

      const bazaar = withBazaar(new HTTPFacilitatorClient({ url: `${m.baseUrl}/x402` }));
      const list = await bazaar.extensions.bazaar.listResources({ type: 'http', limit: 500 });
      expect(list.pagination.limit).toBe(100);
      const observed = list.items.find((i) => i.resource === url);
      expect(observed).toMatchObject({
        type: 'http',
        x402Version: 2,
        accepts: [
          expect.objectContaining({
            scheme: 'exact',
            network: 'stellar:testnet',
            amount: '100000',
            payTo: wallet.publicKey(),
          }),
        ],
        metadata: expect.objectContaining({
          observed: true,
          trust: 'observed',
          hostVerified: true,
          untrusted: true,
          sellerId,
          description: 'Tide times for Porto harbour',
          usage: expect.objectContaining({ settledCalls30d: 2, uniquePayers30d: 2 }),
        }),
      });

      // Paging outside the spec's range is clamped, never refused.
      const far = await fetch(`${m.baseUrl}/x402/discovery/resources?limit=0&offset=-3`);
      expect(far.status).toBe(200);
      expect((await far.json()).pagination).toMatchObject({ limit: 1, offset: 0 });
    },
  );
});
