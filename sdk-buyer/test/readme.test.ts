/**
 * Executes the README's examples: each ```ts block of README.md appears verbatim (modulo indentation) below, run
 * against the real marketplace, the local network and a paywalled endpoint.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { createBuyerClient, ApiError, FileBudgetStore, localDevFetch } from '../src';
import { readmeBlocks, normalize } from '../../test/support/readme';
import { eventually, sellerWithPaidEndpoint, startMarketplace, type Marketplace, type PaidEndpoint } from '../../test/support/marketplace';

describe('README examples', () => {
  let m: Marketplace;
  let endpoint: PaidEndpoint;
  let baseUrl: string;
  let secret: string;
  let url: string;
  const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);

  beforeAll(async () => {
    m = await startMarketplace();
    baseUrl = m.baseUrl;
    endpoint = await sellerWithPaidEndpoint(m, { name: 'Readme Weather', domain: 'readme-weather.test', price: '0.01' });
    const key = Keypair.random();
    await m.network.fundAccount(key.publicKey());
    await m.network.faucet(key.publicKey(), 'USDC', '1');
    secret = key.secret();
    // The seller's domain (.test) resolves nowhere; the README's plain `url` is the same endpoint on 127.0.0.1.
    url = loopbackUrl(endpoint.url.replace('{city}', 'Lisbon'));
    await eventually(async () => (await createBuyerClient({ baseUrl }).discovery.search({ q: 'weather forecast' })).resources.length > 0);
  });
  afterAll(async () => {
    log.mockRestore();
    await endpoint?.stop();
    await m?.stop();
  });

  it('every ts block of README.md is in this file', () => {
    const self = normalize(fs.readFileSync(__filename, 'utf8'));
    const blocks = readmeBlocks(path.resolve(__dirname, '../README.md'));
    expect(blocks.length).toBe(5);
    for (const block of blocks) expect(self).toContain(block);
  });

  it('Browse and search', async () => {
    const buyer = createBuyerClient({ baseUrl });
    const names: string[] = [];
    for await (const r of buyer.discovery.iterate({ network: 'stellar:testnet', limit: 50 })) {
      names.push(`${r.name}: ${r.amount} ${r.assetCode}`);
    }
    const page = await buyer.discovery.search({ q: 'weather forecast' });
    const detail = await buyer.resources.get(page.resources[0].id);
    console.log(detail.paymentRequirements);

    expect(names).toEqual([expect.stringMatching(/^Readme Weather forecast: 0\.01\d* USDC$/)]);
    expect(detail.id).toBe(endpoint.resourceId);
  });

  it('Errors', async () => {
    const buyer = createBuyerClient({ baseUrl });
    try {
      await buyer.resources.get('res_01JD6Z8V3K9Q2W7X4M5N6P8R0T');
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      console.log(err.status, err.code, err.requestId); // 404 RESOURCE_NOT_FOUND req_...
    }
    expect(log).toHaveBeenCalledWith(404, 'RESOURCE_NOT_FOUND', expect.any(String));
  });

  it('Pay for a resource', async () => {
    const payer = createBuyerClient({
      baseUrl,
      payment: { signer: Keypair.fromSecret(secret), budget: { perCall: '0.5', total: '5' } },
    });
    const { response, paid, receipt } = await payer.payAndFetch(url);
    const data = await response.json();
    if (paid && receipt?.receiptId) {
      const stored = await payer.receipts.get(receipt.receiptId);
      const onLedger = await payer.receipts.verifyOnLedger(stored);
      console.log(data, stored.status, onLedger.ok);
    }
    expect(paid).toBe(true);
    expect(log).toHaveBeenLastCalledWith({ city: 'Lisbon', temperatureC: 21.5 }, 'settled', true);
  });

  it('Paying a local seller (*.test)', async () => {
    const localSellerUrl = endpoint.url.replace('{city}', 'Porto');
    expect(new URL(localSellerUrl).hostname).toBe('readme-weather.test');
    const local = createBuyerClient({
      baseUrl,
      fetch: localDevFetch, // *.test hosts go to 127.0.0.1: local development only
      payment: { signer: Keypair.fromSecret(secret), budget: { perCall: '0.5', total: '5' } },
    });
    const localCall = await local.payAndFetch(localSellerUrl); // e.g. http://shop.test:8402/v1/forecast/Porto
    console.log(localCall.paid, localCall.response.status);
    expect(log).toHaveBeenLastCalledWith(true, 200);
  });

  it('What you can lose at most', async () => {
    const budgetFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'readme-budget-')), 'budget.json');
    const careful = createBuyerClient({
      baseUrl,
      payment: { signer: Keypair.fromSecret(secret), budget: { perCall: '0.05', total: '1', store: new FileBudgetStore(budgetFile) } },
    });
    await careful.budget.load();
    const paidCall = await careful.payAndFetch(url);
    await careful.budget.reconcile(); // asks the ledger about signatures not settled yet
    console.log(paidCall.paid, careful.budget.committed, careful.budget.spent, careful.budget.released);
    expect(log).toHaveBeenLastCalledWith(true, '0.0000000', '0.0100000', '0.0000000');
    // The file keeps the commitment for the next process.
    expect(JSON.parse(fs.readFileSync(budgetFile, 'utf8')).commitments).toEqual([expect.objectContaining({ state: 'spent', stroops: '100000' })]);
  });
});

/** The endpoint's URL with its .test host replaced by 127.0.0.1 (same port), so plain fetch reaches it. */
function loopbackUrl(u: string): string {
  const parsed = new URL(u);
  parsed.hostname = '127.0.0.1';
  return parsed.toString();
}
