/**
 * The newcomer tutorial, end to end: a seller signs up and catalogs a paid endpoint served behind `paywall`, a
 * buyer finds it with search, pays with `payAndFetch`, and both read the same receipt; the ledger moved the price.
 */
import { Keypair } from '@stellar/stellar-sdk';
import { createBuyerClient, BudgetExceededError, verifyReceiptOnLedger } from '../../sdk-buyer/src';
import {
  eventually,
  loopbackFetch,
  sellerWithPaidEndpoint,
  startMarketplace,
  type Marketplace,
  type PaidEndpoint,
} from '../support/marketplace';

describe('tutorial: a seller sells a forecast, a buyer finds it and pays for it', () => {
  let m: Marketplace;
  let endpoint: PaidEndpoint;
  let buyerKey: Keypair;

  beforeAll(async () => {
    m = await startMarketplace();
    endpoint = await sellerWithPaidEndpoint(m, {
      name: 'Lisbon Weather',
      domain: 'lisbon-weather.test',
      price: '0.25',
    });
    buyerKey = Keypair.random();
    await m.network.fundAccount(buyerKey.publicKey());
    await m.network.faucet(buyerKey.publicKey(), 'USDC', '10');
  });
  afterAll(async () => {
    await endpoint?.stop();
    await m?.stop();
  });

  it(
    'search -> 402 -> pay -> data; the buyer and the seller read the same settled receipt; balances moved by the ' +
      'price',
    async () => {
      const buyer = createBuyerClient({
        baseUrl: m.baseUrl,
        fetch: loopbackFetch,
        payment: { signer: buyerKey, budget: { perCall: '0.5', total: '1' } },
      });

      // 1. Find it (indexing runs as a background job).
      const found = await eventually(async () =>
        (await buyer.discovery.search({ q: 'weather forecast' })).resources.find((r) => r.id === endpoint.resourceId),
      );
      expect(found).toMatchObject({
        amount: expect.stringMatching(/^0\.25/),
        payTo: endpoint.wallet.publicKey(),
        url: endpoint.url,
      });

      // 2. Without payment the endpoint answers 402 and the handler does not run.
      const url = found.url.replace('{city}', 'Lisbon');
      const unpaid = await loopbackFetch(url);
      expect(unpaid.status).toBe(402);
      expect(unpaid.headers.get('payment-required')).toBeTruthy();
      expect(endpoint.handlerCalls).toBe(0);

      // 3. Pay and fetch.
      const buyerBefore = m.network.balance(buyerKey.publicKey(), 'USDC');
      const sellerBefore = m.network.balance(endpoint.wallet.publicKey(), 'USDC');
      const { response, paid, receipt, payment } = await buyer.payAndFetch(url);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ city: 'Lisbon', temperatureC: 21.5 });
      expect(paid).toBe(true);
      expect(payment).toMatchObject({
        scheme: 'exact',
        network: 'stellar:testnet',
        amount: '0.2500000',
        payTo: endpoint.wallet.publicKey(),
        authorization: { format: 'sorobanAuthorizationEntry', payer: buyerKey.publicKey() },
      });
      expect(receipt).toMatchObject({
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        receiptId: expect.stringMatching(/^rcp_/),
        network: 'stellar:testnet',
      });
      expect(endpoint.handlerCalls).toBe(1);
      expect(buyer.spent).toBe('0.2500000');

      // 4. Both read the same receipt, settled, as local-simulation evidence.
      const settled = await eventually(async () => {
        const r = await buyer.receipts.get(receipt!.receiptId!);
        return r.status === 'settled' ? r : null;
      });
      expect(settled).toMatchObject({
        transactionHash: receipt!.transactionHash,
        resourceId: endpoint.resourceId,
        sellerId: endpoint.sellerId,
        amount: expect.stringMatching(/^0\.25/),
        evidence: 'local_simulation',
      });
      // The seller sees the same receipt plus the marketplace's attestation (the anonymous read never carries it: it
      // names the payer).
      expect(settled).not.toHaveProperty('attestation');
      expect(await endpoint.seller.receipts.get(receipt!.receiptId!)).toEqual({
        ...settled,
        attestation: expect.any(String),
      });

      // 5. The ledger moved exactly the price, and the transaction is there.
      expect(buyerBefore).toBe('10');
      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('9.75');
      expect(sellerBefore).toBe('0.0000001');
      expect(m.network.balance(endpoint.wallet.publicKey(), 'USDC')).toBe('0.2500001');
      await expect(verifyReceiptOnLedger(settled, m.network.rpcUrl)).resolves.toMatchObject({
        ok: true,
        status: 'SUCCESS',
        ledger: settled.ledger,
      });
      await expect(buyer.receipts.verifyOnLedger(settled.id)).resolves.toMatchObject({ ok: true });

      // 6. The seller sees the payment.
      const payments = await endpoint.seller.payments.iterate({ sellerId: endpoint.sellerId }).toArray();
      expect(payments).toEqual([
        expect.objectContaining({ resourceId: endpoint.resourceId, payer: buyerKey.publicKey() }),
      ]);
    },
  );

  it('a payment over the per-call budget is refused before anything is signed, and nothing moves', async () => {
    const buyer = createBuyerClient({
      baseUrl: m.baseUrl,
      fetch: loopbackFetch,
      payment: { signer: buyerKey, budget: { perCall: '0.1' } },
    });
    const before = m.network.balance(buyerKey.publicKey(), 'USDC');
    const err = await buyer.payAndFetch(endpoint.url.replace('{city}', 'Porto')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetExceededError);
    expect(err).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      limit: 'perCall',
      requested: '0.2500000',
      remaining: '0.1000000',
    });
    expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe(before);
    expect(buyer.spent).toBe('0.0000000');
  });

  it('the cumulative budget stops the client once it has spent it', async () => {
    const buyer = createBuyerClient({
      baseUrl: m.baseUrl,
      fetch: loopbackFetch,
      payment: { signer: buyerKey, budget: { total: '0.3' } },
    });
    const first = await buyer.payAndFetch(endpoint.url.replace('{city}', 'Faro'));
    expect(first.paid).toBe(true);
    await expect(buyer.payAndFetch(endpoint.url.replace('{city}', 'Braga'))).rejects.toMatchObject({
      name: 'BudgetExceededError',
      limit: 'total',
      remaining: '0.0500000',
    });
  });
});
