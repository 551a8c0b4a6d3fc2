/**
 * A seller who already runs the stock x402 packages points them at us: a stock `@x402/express` 2.27 app
 * (`paymentMiddleware` + `HTTPFacilitatorClient` at `<base>/x402` + the stock Stellar `exact` server scheme, price
 * "$0.125" so the stock testnet USDC default is used) and the stock `@x402/fetch` 2.27 client with `@x402/stellar`
 * pay on the local network (local simulation). The registry's @x402/stellar is 2.9: its schemes go through the seller
 * SDK's adapters (`adaptStellarServerScheme`, `adaptStellarClientScheme`), never patched (issue #30). The marketplace
 * records the attempt, settlement and receipt like any other payment, signs the receipt, and refuses a replay. The
 * `upfront` flow settles before the handler; the floor case pays with the 2.9 packages (npm aliases).
 */
import { Keypair } from '@stellar/stellar-sdk';
import express from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactStellarScheme as ExactStellarServer } from '@x402/stellar/exact/server';
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from '@x402/fetch';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import {
  paymentMiddleware as paymentMiddleware29,
  x402ResourceServer as x402ResourceServer29,
} from '@x402/express-2.9';
import { HTTPFacilitatorClient as HTTPFacilitatorClient29 } from '@x402/core-2.9/server';
import {
  wrapFetchWithPayment as wrapFetchWithPayment29,
  x402Client as x402Client29,
  decodePaymentResponseHeader as decodePaymentResponseHeader29,
} from '@x402/fetch-2.9';
import { adaptStellarClientScheme, adaptStellarServerScheme, createSellerClient } from '../../sdk-seller/src';
import { createBuyerClient, verifyAttestation } from '../../sdk-buyer/src';
import {
  eventually,
  httpsRpcFront,
  listen,
  loopbackFetch,
  startMarketplace,
  type Marketplace,
} from '../support/marketplace';

const TESTNET_USDC_CONTRACT = 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA';

describe(
  'a stock @x402/express 2.27 seller and a stock @x402/fetch ' + '2.27 buyer, through the marketplace x402 API',
  () => {
    let m: Marketplace;
    let front: { rpcUrl: string; close(): Promise<void> };
    let shop: { close(): Promise<void> };
    let wallet: Keypair;
    let buyerKey: Keypair;
    let sellerApiKey: string;
    let resourceId: string;
    let url: string;
    let handlerCalls = 0;
    const sentPaymentHeaders: string[] = [];
    /** The buyer's USDC balance as each call of the upfront route's handler saw it. */
    const faroSawBuyerBalance: string[] = [];
    /** The stock 2.27 client with the registry's @x402/stellar 2.9 client scheme, through the seller SDK's adapter. */
    const stockClient = (key: Keypair) =>
      new x402Client().register(
        'stellar:testnet',
        adaptStellarClientScheme(
          new ExactStellarScheme(createEd25519Signer(key.secret(), 'stellar:testnet'), { url: front.rpcUrl }),
        ),
      );

    beforeAll(async () => {
      m = await startMarketplace();
      front = await httpsRpcFront(m.network);
      wallet = Keypair.random();
      await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
      buyerKey = Keypair.random();
      await m.network.faucet(buyerKey.publicKey(), 'USDC', '5');

      // The stock client passes the seller's key (createAuthHeaders): settling a URL that is not cataloged needs the
      // key of the seller the payment goes to (issue #18).
      const auth = async () => ({ Authorization: `Bearer ${sellerApiKey}` });
      const facilitator = new HTTPFacilitatorClient({
        url: `${m.baseUrl}/x402`,
        createAuthHeaders: async () => ({ verify: await auth(), settle: await auth(), supported: {} }),
      });
      const server = new x402ResourceServer(facilitator).register(
        'stellar:testnet',
        adaptStellarServerScheme(new ExactStellarServer()),
      );
      const app = express();
      const started = await listen(app);
      shop = started;
      url = `http://stock-shop.test:${started.port}/v1/forecast/porto`;
      app.use(
        paymentMiddleware(
          {
            'GET /v1/forecast/porto': {
              accepts: { scheme: 'exact', price: '$0.125', network: 'stellar:testnet', payTo: wallet.publicKey() },
              resource: url,
              description: 'Porto forecast',
            },
            // Not cataloged with us: paid through the same facilitator all the same.
            'GET /v1/forecast/braga': {
              accepts: { scheme: 'exact', price: '$0.125', network: 'stellar:testnet', payTo: wallet.publicKey() },
              resource: `http://stock-shop.test:${started.port}/v1/forecast/braga`,
              description: 'Braga forecast',
            },
            // The upfront flow (issue #30): settled before the handler runs.
            'GET /v1/forecast/faro': {
              accepts: {
                scheme: 'exact',
                price: '$0.125',
                network: 'stellar:testnet',
                payTo: wallet.publicKey(),
                extra: { paymentFlow: 'upfront' },
              },
              resource: `http://stock-shop.test:${started.port}/v1/forecast/faro`,
              description: 'Faro forecast',
            },
          },
          server,
        ),
      );
      app.get('/v1/forecast/faro', (_req, res) => {
        faroSawBuyerBalance.push(m.network.balance(buyerKey.publicKey(), 'USDC'));
        res.json({ city: 'Faro', temperatureC: 24 });
      });
      app.get('/v1/forecast/braga', (_req, res) => {
        res.json({ city: 'Braga', temperatureC: 18 });
      });
      app.get('/v1/forecast/porto', (_req, res) => {
        handlerCalls += 1;
        res.json({ city: 'Porto', temperatureC: 21.5 });
      });

      // The seller catalogs the stock app's URL with the stock default asset (Circle's testnet USDC, hosted locally).
      const signup = createSellerClient({ baseUrl: m.baseUrl });
      const { seller: me, apiKey } = await signup.sellers.signUp({
        displayName: 'Stock Shop',
        domain: 'stock-shop.test',
        wallet,
      });
      sellerApiKey = apiKey;
      const usdc = m.network.assets.find((a) => a.code === 'USDC')!;
      expect(usdc.contractId).toBe(TESTNET_USDC_CONTRACT);
      const cataloged = await signup.withApiKey(apiKey).catalog.catalog({
        sellerId: me.id,
        resource: {
          type: 'http',
          name: 'Stock shop forecast',
          description: 'Hourly weather forecast for Porto, paid per call in USDC through stock x402 packages',
          url,
          routeTemplate: '/v1/forecast/porto',
          network: 'stellar:testnet',
          payTo: wallet.publicKey(),
          assetCode: 'USDC',
          assetIssuer: usdc.issuer,
          amount: '0.125',
          inputSchema: { type: 'object', properties: {} },
          outputSchema: { type: 'object', properties: { city: { type: 'string' }, temperatureC: { type: 'number' } } },
          extensions: { bazaar: { discoverable: true } },
        },
      });
      resourceId = cataloged.resourceId;
    });

    afterAll(async () => {
      await shop?.close();
      await front?.close();
      await m?.stop();
    });

    it(
      'pays: the answer arrives, balances move by the price, the payment, settlement and attestation are ours; a ' +
        'replay is refused',
      async () => {
        const client = stockClient(buyerKey);
        const recordingFetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
          const request = input instanceof Request ? input : new Request(input, init);
          const header = request.headers.get('PAYMENT-SIGNATURE');
          if (header) sentPaymentHeaders.push(header);
          return loopbackFetch(request);
        };
        const paidFetch = wrapFetchWithPayment(recordingFetch as typeof fetch, client);

        const response = await paidFetch(url);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ city: 'Porto', temperatureC: 21.5 });
        expect(handlerCalls).toBe(1);

        const settle = decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') as string) as unknown as {
          success: boolean;
          transaction: string;
          payer: string;
          network: string;
          extensions: {
            marketplace: { receiptId: string; paymentAttemptId: string; evidence: string; attestation: string };
          };
        };
        expect(settle).toMatchObject({
          success: true,
          network: 'stellar:testnet',
          payer: buyerKey.publicKey(),
          transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
        });
        expect(settle.extensions.marketplace).toMatchObject({
          receiptId: expect.stringMatching(/^rcp_/),
          paymentAttemptId: expect.stringMatching(/^pay_/),
          evidence: 'local_simulation',
        });
        // The marketplace's attestation (not an offer-and-receipt receipt: sellers sign those with their own key).
        const jws = settle.extensions.marketplace.attestation;
        expect(settle.extensions).not.toHaveProperty('offer-receipt');

        // Balances moved by the price (local simulation).
        expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('4.875');
        expect(m.network.balance(wallet.publicKey(), 'USDC')).toBe('0.1250001');

        // The payment, its settlement and receipt, through our API, linked to the cataloged resource.
        const seller = createSellerClient({ baseUrl: m.baseUrl, apiKey: sellerApiKey });
        const listed = await fetch(`${m.baseUrl}/v1/payments?resourceId=${resourceId}`, {
          headers: { authorization: `Bearer ${sellerApiKey}` },
        }).then((r) => r.json());
        expect(listed.items).toEqual([
          expect.objectContaining({
            id: settle.extensions.marketplace.paymentAttemptId,
            payer: buyerKey.publicKey(),
            resourceId,
            status: 'settled',
          }),
        ]);
        const receipt = await eventually(async () => {
          const r = await seller.receipts.get(settle.extensions.marketplace.receiptId);
          return r.status === 'settled' ? r : null;
        });
        expect(receipt).toMatchObject({
          resourceId,
          transactionHash: settle.transaction,
          amount: '0.125',
          evidence: 'local_simulation',
          attestation: jws,
        });

        // The attestation verifies offline with the published keys and names what was paid.
        const jwks = await fetch(`${m.baseUrl}/.well-known/jwks.json`).then((r) => r.json());
        const verified = await verifyAttestation(jws, jwks);
        expect(verified).toMatchObject({
          valid: true,
          payload: {
            kind: 'facilitator-attestation',
            version: 1,
            network: 'stellar:testnet',
            payer: buyerKey.publicKey(),
            payTo: wallet.publicKey(),
            amount: '1250000',
            transaction: settle.transaction,
            resource: { id: resourceId, url },
          },
        });

        // An anonymous reader sees the receipt, never the payer or the signed receipt.
        const anonymous = await createBuyerClient({ baseUrl: m.baseUrl }).receipts.get(receipt.id);
        expect(anonymous).not.toHaveProperty('attestation');
        expect(JSON.stringify(anonymous)).not.toContain(buyerKey.publicKey());

        // The same signed payment sent again is refused: no second delivery, no second transfer.
        expect(sentPaymentHeaders).toHaveLength(1);
        const replay = await loopbackFetch(url, { headers: { 'PAYMENT-SIGNATURE': sentPaymentHeaders[0] } });
        expect(replay.status).toBe(402);
        expect(handlerCalls).toBe(1);
        expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('4.875');
      },
    );

    it(
      'an uncataloged URL of a stock shop is paid once through us: balances move by the price, the receipt has no ' +
        'resource; a replay is refused',
      async () => {
        const braga = url.replace('/porto', '/braga');
        const client = stockClient(buyerKey);
        const sent: string[] = [];
        const recordingFetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
          const request = input instanceof Request ? input : new Request(input, init);
          const header = request.headers.get('PAYMENT-SIGNATURE');
          if (header) sent.push(header);
          return loopbackFetch(request);
        };
        const buyerBefore = Number(m.network.balance(buyerKey.publicKey(), 'USDC'));
        const sellerBefore = Number(m.network.balance(wallet.publicKey(), 'USDC'));
        const response = await wrapFetchWithPayment(recordingFetch as typeof fetch, client)(braga);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ city: 'Braga', temperatureC: 18 });
        const settle = decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') as string) as unknown as {
          success: boolean;
          transaction: string;
          extensions: { marketplace: { receiptId: string } };
        };
        expect(settle).toMatchObject({ success: true, transaction: expect.stringMatching(/^[0-9a-f]{64}$/) });
        expect(Number(m.network.balance(buyerKey.publicKey(), 'USDC'))).toBeCloseTo(buyerBefore - 0.125, 7);
        expect(Number(m.network.balance(wallet.publicKey(), 'USDC'))).toBeCloseTo(sellerBefore + 0.125, 7);
        const receipt = await eventually(async () => {
          const r = await createBuyerClient({ baseUrl: m.baseUrl }).receipts.get(
            settle.extensions.marketplace.receiptId,
          );
          return r.status === 'settled' ? r : null;
        });
        expect(receipt).toMatchObject({ resourceId: null, transactionHash: settle.transaction, amount: '0.125' });

        expect(sent).toHaveLength(1);
        const replay = await loopbackFetch(braga, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
        expect(replay.status).toBe(402);
        expect(Number(m.network.balance(buyerKey.publicKey(), 'USDC'))).toBeCloseTo(buyerBefore - 0.125, 7);
      },
    );

    it(
      "the registry's @x402/stellar 2.9 schemes as they are do not fit 2.27: paymentMiddleware throws, the default " +
        'spend controls refuse Stellar USDC; adapted, they only gain the missing members',
      async () => {
        const facilitator = new HTTPFacilitatorClient({ url: `${m.baseUrl}/x402` });
        const bare = new ExactStellarServer();
        const route = {
          'GET /x': {
            accepts: {
              scheme: 'exact',
              price: '$0.125',
              network: 'stellar:testnet' as const,
              payTo: wallet.publicKey(),
            },
          },
        };
        // The stock server scheme lacks defaultAssetTransferMethod and paymentFlows: 2.27 cannot resolve a route's
        // flow.
        expect(() =>
          paymentMiddleware(route, new x402ResourceServer(facilitator).register('stellar:testnet', bare as never)),
        ).toThrow();
        const adapted = adaptStellarServerScheme(bare);
        expect(() =>
          paymentMiddleware(route, new x402ResourceServer(facilitator).register('stellar:testnet', adapted)),
        ).not.toThrow();
        expect(adapted).toMatchObject({
          scheme: 'exact',
          defaultAssetTransferMethod: 'default',
          paymentFlows: { default: { supported: ['authorization', 'upfront'], default: 'authorization' } },
        });
        expect(Object.getPrototypeOf(adapted)).toBe(bare);
        expect(bare).not.toHaveProperty('paymentFlows'); // the stock object is never changed

        // The stock client scheme lacks findDefaultAsset: 2.27's default spend controls refuse the payment before
        // signing.
        const buyerBefore = m.network.balance(buyerKey.publicKey(), 'USDC');
        const callsBefore = handlerCalls;
        const unadapted = new x402Client().register(
          'stellar:testnet',
          new ExactStellarScheme(createEd25519Signer(buyerKey.secret(), 'stellar:testnet'), { url: front.rpcUrl }),
        );
        await expect(wrapFetchWithPayment(loopbackFetch as typeof fetch, unadapted)(url)).rejects.toThrow(
          /spendControls/,
        );
        expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe(buyerBefore);
        expect(handlerCalls).toBe(callsBefore);
        const client = adaptStellarClientScheme(
          new ExactStellarScheme(createEd25519Signer(buyerKey.secret(), 'stellar:testnet'), { url: front.rpcUrl }),
        );
        expect(client.findDefaultAsset(TESTNET_USDC_CONTRACT, 'stellar:testnet')).toEqual({
          asset: TESTNET_USDC_CONTRACT,
          decimals: 7,
          symbol: 'USDC',
        });
        expect(client.findDefaultAsset(TESTNET_USDC_CONTRACT, 'stellar:pubnet')).toBeUndefined();
      },
    );

    it(
      'the upfront flow: the 402 names paymentFlow upfront, the payment settles before the handler runs, once; a ' +
        'replay is refused',
      async () => {
        const faro = url.replace('/porto', '/faro');
        const unpaid = await loopbackFetch(faro);
        expect(unpaid.status).toBe(402);
        const required = JSON.parse(
          Buffer.from(unpaid.headers.get('payment-required') as string, 'base64').toString('utf8'),
        );
        expect(required.accepts[0].extra).toMatchObject({ paymentFlow: 'upfront', areFeesSponsored: true });

        const sent: string[] = [];
        const recordingFetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
          const request = input instanceof Request ? input : new Request(input, init);
          const header = request.headers.get('PAYMENT-SIGNATURE');
          if (header) sent.push(header);
          return loopbackFetch(request);
        };
        const buyerBefore = Number(m.network.balance(buyerKey.publicKey(), 'USDC'));
        const response = await wrapFetchWithPayment(recordingFetch as typeof fetch, stockClient(buyerKey))(faro);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ city: 'Faro', temperatureC: 24 });
        // The handler already saw the buyer's balance moved by the price: the transfer landed before it ran.
        expect(faroSawBuyerBalance).toHaveLength(1);
        expect(Number(faroSawBuyerBalance[0])).toBeCloseTo(buyerBefore - 0.125, 7);
        const settle = decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE') as string) as unknown as {
          success: boolean;
          transaction: string;
        };
        expect(settle).toMatchObject({ success: true, transaction: expect.stringMatching(/^[0-9a-f]{64}$/) });
        expect(Number(m.network.balance(buyerKey.publicKey(), 'USDC'))).toBeCloseTo(buyerBefore - 0.125, 7);

        expect(sent).toHaveLength(1);
        const replay = await loopbackFetch(faro, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
        expect(replay.status).toBe(402);
        expect(faroSawBuyerBalance).toHaveLength(1);
        expect(Number(m.network.balance(buyerKey.publicKey(), 'USDC'))).toBeCloseTo(buyerBefore - 0.125, 7);
      },
    );

    it(
      "the floor: a stock @x402/express 2.9 seller and a stock @x402/fetch 2.9 buyer (npm aliases, the registry's " +
        'schemes as they are) pay once through us; a replay is refused',
      async () => {
        const auth = { Authorization: `Bearer ${sellerApiKey}` };
        const facilitator = new HTTPFacilitatorClient29({
          url: `${m.baseUrl}/x402`,
          createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: {} }),
        });
        const server = new x402ResourceServer29(facilitator).register('stellar:testnet', new ExactStellarServer());
        const app = express();
        const started = await listen(app);
        try {
          const evora = `http://stock-shop.test:${started.port}/v1/forecast/evora`;
          let calls = 0;
          app.use(
            paymentMiddleware29(
              {
                'GET /v1/forecast/evora': {
                  accepts: { scheme: 'exact', price: '$0.125', network: 'stellar:testnet', payTo: wallet.publicKey() },
                  resource: evora,
                  description: 'Evora forecast',
                },
              },
              server,
            ),
          );
          app.get('/v1/forecast/evora', (_req, res) => {
            calls += 1;
            res.json({ city: 'Evora', temperatureC: 27 });
          });
          const sent: string[] = [];
          const recordingFetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
            const request = input instanceof Request ? input : new Request(input, init);
            const header = request.headers.get('PAYMENT-SIGNATURE');
            if (header) sent.push(header);
            return loopbackFetch(request);
          };
          const client = new x402Client29().register(
            'stellar:testnet',
            new ExactStellarScheme(createEd25519Signer(buyerKey.secret(), 'stellar:testnet'), { url: front.rpcUrl }),
          );
          const buyerBefore = Number(m.network.balance(buyerKey.publicKey(), 'USDC'));
          const response = await wrapFetchWithPayment29(recordingFetch as typeof fetch, client)(evora);
          expect(response.status).toBe(200);
          expect(await response.json()).toEqual({ city: 'Evora', temperatureC: 27 });
          const settle = decodePaymentResponseHeader29(
            response.headers.get('PAYMENT-RESPONSE') as string,
          ) as unknown as {
            success: boolean;
            transaction: string;
          };
          expect(settle).toMatchObject({ success: true, transaction: expect.stringMatching(/^[0-9a-f]{64}$/) });
          expect(Number(m.network.balance(buyerKey.publicKey(), 'USDC'))).toBeCloseTo(buyerBefore - 0.125, 7);
          expect(sent).toHaveLength(1);
          const replay = await loopbackFetch(evora, { headers: { 'PAYMENT-SIGNATURE': sent[0] } });
          expect(replay.status).toBe(402);
          expect(calls).toBe(1);
          expect(Number(m.network.balance(buyerKey.publicKey(), 'USDC'))).toBeCloseTo(buyerBefore - 0.125, 7);
        } finally {
          await started.close();
        }
      },
    );

    it('lists the cataloged resource in the Bazaar shape with the stock testnet USDC default', async () => {
      // the Bazaar lists indexed documents: the catalog write is indexed by a job, as for search
      const list = await eventually(async () => {
        const body = await fetch(`${m.baseUrl}/x402/discovery/resources?limit=10`).then((r) => r.json());
        return body.items?.some((i: { resource: string }) => i.resource === url) ? body : null;
      });
      expect(list.x402Version).toBe(2);
      expect(list.items).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            resource: url,
            type: 'http',
            accepts: [
              expect.objectContaining({
                scheme: 'exact',
                network: 'stellar:testnet',
                asset: TESTNET_USDC_CONTRACT,
                amount: '1250000',
                payTo: wallet.publicKey(),
              }),
            ],
            metadata: expect.objectContaining({ resourceId }),
          }),
        ]),
      );
    });
  },
);
