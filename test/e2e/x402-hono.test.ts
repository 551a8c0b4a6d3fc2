/**
 * A seller on Hono (issue #30): a stock `@x402/hono` 2.27 app (`paymentMiddleware` + `HTTPFacilitatorClient` at
 * `<base>/x402` + the registry's `@x402/stellar` 2.9 server scheme through the seller SDK's
 * `adaptStellarServerScheme`), served by `@hono/node-server`, is paid by the stock `@x402/fetch` 2.27 client (the
 * 2.9 client scheme through `adaptStellarClientScheme`) on the local network (local simulation). The marketplace
 * settles once, keeps the receipt, and refuses a replay.
 */
import type { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { paymentMiddleware, x402ResourceServer } from '@x402/hono';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactStellarScheme as ExactStellarServer } from '@x402/stellar/exact/server';
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from '@x402/fetch';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import { adaptStellarClientScheme, adaptStellarServerScheme, createSellerClient } from '../../sdk-seller/src';
import { createBuyerClient } from '../../sdk-buyer/src';
import { eventually, httpsRpcFront, loopbackFetch, startMarketplace, type Marketplace } from '../support/marketplace';

describe('a stock @x402/hono 2.27 seller and a stock @x402/fetch 2.27 buyer, through the marketplace x402 API', () => {
  let m: Marketplace;
  let front: { rpcUrl: string; close(): Promise<void> };
  let close: () => Promise<void>;
  let wallet: Keypair;
  let buyerKey: Keypair;
  let sellerApiKey: string;
  let url: string;
  let handlerCalls = 0;

  beforeAll(async () => {
    m = await startMarketplace();
    front = await httpsRpcFront(m.network);
    wallet = Keypair.random();
    await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
    buyerKey = Keypair.random();
    await m.network.faucet(buyerKey.publicKey(), 'USDC', '2');
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    sellerApiKey = (await signup.sellers.signUp({ displayName: 'Hono Shop', domain: 'hono-shop.test', wallet })).apiKey;

    // The seller's key on verify and settle: this URL is not cataloged, so it settles only when its seller asks.
    const auth = { Authorization: `Bearer ${sellerApiKey}` };
    const facilitator = new HTTPFacilitatorClient({
      url: `${m.baseUrl}/x402`,
      createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: {} }),
    });
    const server = new x402ResourceServer(facilitator).register(
      'stellar:testnet',
      adaptStellarServerScheme(new ExactStellarServer()),
    );
    const app = new Hono();
    // Listen first (routes are added before the first request), so the route's resource URL names the real port.
    const listening = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    const port = (listening.address() as AddressInfo).port;
    url = `http://hono-shop.test:${port}/v1/tides/porto`;
    app.use(
      paymentMiddleware(
        {
          'GET /v1/tides/porto': {
            accepts: { scheme: 'exact', price: '$0.125', network: 'stellar:testnet', payTo: wallet.publicKey() },
            resource: url,
            description: 'Porto tides',
          },
        },
        server,
      ),
    );
    app.get('/v1/tides/porto', (c) => {
      handlerCalls += 1;
      return c.json({ harbour: 'Porto', highTides: ['06:12', '18:40'] });
    });
    close = () => new Promise<void>((resolve) => listening.close(() => resolve()));
  });

  afterAll(async () => {
    await close?.();
    await front?.close();
    await m?.stop();
  });

  it("an unpaid request answers 402 with our facilitator's Stellar requirements", async () => {
    const unpaid = await loopbackFetch(url);
    expect(unpaid.status).toBe(402);
    const required = JSON.parse(
      Buffer.from(unpaid.headers.get('payment-required') as string, 'base64').toString('utf8'),
    );
    expect(required.accepts[0]).toMatchObject({
      scheme: 'exact',
      network: 'stellar:testnet',
      amount: '1250000',
      payTo: wallet.publicKey(),
      extra: { areFeesSponsored: true },
    });
    expect(handlerCalls).toBe(0);
  });

  it(
    'pays once: the answer arrives, balances move by the ' + 'price, the receipt is kept; a replay is refused',
    async () => {
      const client = new x402Client().register(
        'stellar:testnet',
        adaptStellarClientScheme(
          new ExactStellarScheme(createEd25519Signer(buyerKey.secret(), 'stellar:testnet'), { url: front.rpcUrl }),
        ),
      );
      const sent: string[] = [];
      const recordingFetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
        const request = input instanceof Request ? input : new Request(input, init);
        const header = request.headers.get('PAYMENT-SIGNATURE');
        if (header) sent.push(header);
        return loopbackFetch(request);
      };
      const response = await wrapFetchWithPayment(recordingFetch as typeof fetch, client)(url);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ harbour: 'Porto', highTides: ['06:12', '18:40'] });
      expect(handlerCalls).toBe(1);
      const settle = decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') as string) as unknown as {
        success: boolean;
        transaction: string;
        payer: string;
        extensions: { marketplace: { receiptId: string; evidence: string } };
      };
      expect(settle).toMatchObject({
        success: true,
        payer: buyerKey.publicKey(),
        transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(settle.extensions.marketplace.evidence).toBe('local_simulation');
      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('1.875');
      expect(m.network.balance(wallet.publicKey(), 'USDC')).toBe('0.1250001');
      const receipt = await eventually(async () => {
        const r = await createBuyerClient({ baseUrl: m.baseUrl }).receipts.get(settle.extensions.marketplace.receiptId);
        return r.status === 'settled' ? r : null;
      });
      expect(receipt).toMatchObject({
        resourceId: null,
        transactionHash: settle.transaction,
        amount: '0.125',
        evidence: 'local_simulation',
      });

      expect(sent).toHaveLength(1);
      const replay = await loopbackFetch(url, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
      expect(replay.status).toBe(402);
      expect(handlerCalls).toBe(1);
      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('1.875');
    },
  );
});
