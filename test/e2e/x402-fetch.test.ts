/**
 * Interoperability: the stock x402 client (`@x402/fetch` 2.27 + the registry's `@x402/stellar` 2.9 exact scheme,
 * through the seller SDK's `adaptStellarClientScheme`, issue #30) pays our seller's
 * paywalled endpoint. The paywall translates its payload ({ payload: { transaction } }) into our facilitator's
 * format (`authorization.format = 'transaction'`), and the marketplace verifies and settles it.
 *
 * The stock client builds its transaction without `allowHttp`, so it reaches the local network through an HTTPS
 * front with a self-signed certificate that this process trusts (see httpsRpcFront).
 */
import { Keypair } from '@stellar/stellar-sdk';
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from '@x402/fetch';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import { createBuyerClient, verifyAttestation, attestationOf } from '../../sdk-buyer/src';
import { adaptStellarClientScheme } from '../../sdk-seller/src';
import {
  eventually,
  httpsRpcFront,
  loopbackFetch,
  sellerWithPaidEndpoint,
  startMarketplace,
  type Marketplace,
  type PaidEndpoint,
} from '../support/marketplace';

describe('the stock @x402/fetch 2.27 client pays a paywalled endpoint', () => {
  let m: Marketplace;
  let endpoint: PaidEndpoint;
  let buyerKey: Keypair;
  let front: { rpcUrl: string; close(): Promise<void> };

  beforeAll(async () => {
    m = await startMarketplace();
    front = await httpsRpcFront(m.network);
    endpoint = await sellerWithPaidEndpoint(m, { name: 'Porto Weather', domain: 'porto-weather.test', price: '0.125' });
    buyerKey = Keypair.random();
    await m.network.fundAccount(buyerKey.publicKey());
    await m.network.faucet(buyerKey.publicKey(), 'USDC', '5');
  });
  afterAll(async () => {
    await endpoint?.stop();
    await front?.close();
    await m?.stop();
  });

  it(
    '402 -> the x402 client signs -> the paywall verifies and settles -> data, PAYMENT-RESPONSE, receipt; ' +
      'balances moved by the price',
    async () => {
      const client = new x402Client().register(
        'stellar:testnet',
        adaptStellarClientScheme(
          new ExactStellarScheme(createEd25519Signer(buyerKey.secret(), 'stellar:testnet'), { url: front.rpcUrl }),
        ),
      );
      const paidFetch = wrapFetchWithPayment(loopbackFetch as typeof fetch, client);

      const sellerBefore = m.network.balance(endpoint.wallet.publicKey(), 'USDC');
      const response = await paidFetch(endpoint.url.replace('{city}', 'Porto'));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ city: 'Porto', temperatureC: 21.5 });

      const settle = decodePaymentResponseHeader(
        response.headers.get('PAYMENT-RESPONSE') as string,
      ) as unknown as Record<string, unknown>;
      expect(settle).toMatchObject({
        success: true,
        transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
        network: 'stellar:testnet',
        payer: buyerKey.publicKey(),
        receiptId: expect.stringMatching(/^rcp_/),
      });

      const buyer = createBuyerClient({ baseUrl: m.baseUrl });
      const receipt = await eventually(async () => {
        const r = await buyer.receipts.get(settle.receiptId as string);
        return r.status === 'settled' ? r : null;
      });
      expect(receipt).toMatchObject({
        transactionHash: settle.transaction,
        resourceId: endpoint.resourceId,
        evidence: 'local_simulation',
      });
      const sellerView = await endpoint.seller.receipts.get(receipt.id);
      expect(sellerView).toEqual({ ...receipt, attestation: expect.any(String) });
      // The paywall passes the marketplace's attestation to the payer (extensions.marketplace.attestation, the same JWS
      // the seller reads); it verifies offline with the marketplace's published keys.
      expect(attestationOf(settle)).toBe(sellerView.attestation);
      const jwks = await fetch(`${m.baseUrl}/.well-known/jwks.json`).then((r) => r.json());
      expect(await verifyAttestation(attestationOf(settle), jwks)).toMatchObject({
        valid: true,
        payload: {
          kind: 'facilitator-attestation',
          network: 'stellar:testnet',
          payer: buyerKey.publicKey(),
          payTo: endpoint.wallet.publicKey(),
          amount: '1250000',
          transaction: settle.transaction,
          resource: { id: endpoint.resourceId, url: endpoint.url },
        },
      });
      expect(receipt).not.toHaveProperty('attestation');

      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('4.875');
      expect(m.network.balance(endpoint.wallet.publicKey(), 'USDC')).toBe('0.1250001');
      expect(sellerBefore).toBe('0.0000001');
      expect(endpoint.handlerCalls).toBe(1);
    },
  );
});
