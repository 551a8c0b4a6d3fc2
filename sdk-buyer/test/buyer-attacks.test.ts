/**
 * The buyer SDK against a hostile seller (issue #20): a fake seller (an Express app written here) in front of the
 * REAL marketplace, the local network and real signatures. Each attack has its test, named after it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { Asset, Keypair } from '@stellar/stellar-sdk';
import {
  createBuyerClient,
  BudgetExceededError,
  FileBudgetStore,
  PaymentFailedError,
  verifyReceiptOnLedger,
} from '../src';
import { facilitatorRequirements, paymentRequiredFor, requirementsSource } from '../../sdk-seller/src/paywall/paywall';
import { toFacilitatorPayload } from '../../sdk-seller/src';
import {
  eventually,
  listen,
  sellerWithPaidEndpoint,
  startMarketplace,
  type Marketplace,
  type PaidEndpoint,
} from '../../test/support/marketplace';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const unb64 = (v: string) => JSON.parse(Buffer.from(v, 'base64').toString('utf8'));

describe('buyer SDK against a hostile seller', () => {
  let m: Marketplace;
  let endpoint: PaidEndpoint;
  let fake: {
    url: string;
    collected: Array<Record<string, unknown>>;
    mode: 'withhold' | 'asset-swap' | 'price-raise';
    close(): Promise<void>;
  };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'budget-'));

  async function fundedBuyer(usdc = '5'): Promise<Keypair> {
    const k = Keypair.random();
    await m.network.fundAccount(k.publicKey());
    await m.network.faucet(k.publicKey(), 'USDC', usdc);
    return k;
  }

  beforeAll(async () => {
    m = await startMarketplace();
    endpoint = await sellerWithPaidEndpoint(m, {
      name: 'Hostile Weather',
      domain: 'hostile-weather.test',
      price: '0.05',
    });
    const terms = requirementsSource({ client: endpoint.seller, resourceId: endpoint.resourceId });
    const xlm = Asset.native().contractId(m.network.networkPassphrase);
    const app = express();
    fake = { url: '', collected: [], mode: 'withhold', close: async () => undefined };
    app.get('/paid', async (req, res) => {
      const t = await terms();
      const pr = paymentRequiredFor(
        t,
        endpoint.resourceId,
        { url: fake.url, description: '', mimeType: 'application/json' },
        'PAYMENT_REQUIRED',
      );
      if (fake.mode === 'asset-swap') pr.accepts[0].asset = xlm; // shows USDC in extra, asks to sign native XLM
      if (fake.mode === 'price-raise') pr.accepts[0].amount = '900000'; // 0.09 instead of the cataloged 0.05
      const sig = req.headers['payment-signature'];
      if (typeof sig !== 'string') return res.status(402).set('PAYMENT-REQUIRED', b64(pr)).json(pr);
      // The signed authorization is kept (it can be settled any time before it expires); the buyer gets an error.
      fake.collected.push(unb64(sig));
      res.status(500).json({ error: 'try again later' });
    });
    const h = await listen(app);
    fake.url = `http://127.0.0.1:${h.port}/paid`;
    fake.close = h.close;
  });
  afterAll(async () => {
    await fake?.close();
    await endpoint?.stop();
    await m?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it(
    'when a fake seller collects signed payments without settling, the budget counts every signature: 10 tries ' +
      'at 0.05 against 0.1 sign only 2',
    async () => {
      fake.mode = 'withhold';
      fake.collected.length = 0;
      const key = await fundedBuyer();
      const store = new FileBudgetStore(path.join(tmp, 'withhold.json'));
      const buyer = createBuyerClient({
        baseUrl: m.baseUrl,
        payment: { signer: key, budget: { perCall: '0.05', total: '0.1', store }, validForLedgers: 40 },
      });
      const outcomes: string[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await buyer.payAndFetch(fake.url).then(
          (x) => `status ${x.response.status}`,
          (e: unknown) => (e instanceof BudgetExceededError ? 'BUDGET_EXCEEDED' : String(e)),
        );
        outcomes.push(r);
      }
      expect(outcomes).toEqual(['status 500', 'status 500', ...Array(8).fill('BUDGET_EXCEEDED')]);
      expect(fake.collected).toHaveLength(2);
      expect(buyer.budget.committed).toBe('0.1000000');
      expect(buyer.budget.spent).toBe('0.0000000');

      // A restart with the same store still counts both signatures.
      const restarted = createBuyerClient({
        baseUrl: m.baseUrl,
        payment: { signer: key, budget: { perCall: '0.05', total: '0.1', store: new FileBudgetStore(store.file) } },
      });
      await expect(restarted.payAndFetch(fake.url)).rejects.toBeInstanceOf(BudgetExceededError);
      expect(restarted.budget.committed).toBe('0.1000000');

      // The fake seller settles one of them later, through the real facilitator.
      const t = await requirementsSource({ client: endpoint.seller, resourceId: endpoint.resourceId })();
      const payload = toFacilitatorPayload(fake.collected[0], t);
      const verified = await endpoint.seller.facilitator.verify({
        x402Version: 2,
        paymentPayload: payload,
        paymentRequirements: facilitatorRequirements(t),
        resourceId: endpoint.resourceId,
      });
      const settled = await endpoint.seller.facilitator.settle({
        paymentAttemptId: verified.paymentAttemptId,
        paymentPayload: payload,
        resourceId: endpoint.resourceId,
      });
      await eventually(async () => (await buyer.receipts.get(settled.receiptId)).status === 'settled');

      // Once both expiry ledgers have passed, the ledger decides: the settled one is spent, the other released.
      const lastExpiry = Math.max(...fake.collected.map((p) => Number(p.expiresAtLedger)));
      await eventually(async () => m.network.latestLedger() > lastExpiry);
      await restarted.budget.reconcile();
      expect({
        committed: restarted.budget.committed,
        spent: restarted.budget.spent,
        released: restarted.budget.released,
      }).toEqual({ committed: '0.0000000', spent: '0.0500000', released: '0.0500000' });
      expect(restarted.budget.list().find((c) => c.state === 'spent')?.transactionHash).toBe(settled.transactionHash);
      const [totals] = await restarted.budget.totals();
      expect(totals).toMatchObject({
        network: 'stellar:testnet',
        asset: m.network.assets.find((a) => a.code === 'USDC')!.contractId,
      });
    },
  );

  it(
    'when the 402 shows USDC in extra but asks to sign the native ' + 'XLM contract, the buyer refuses before signing',
    async () => {
      fake.mode = 'asset-swap';
      fake.collected.length = 0;
      const buyer = createBuyerClient({
        baseUrl: m.baseUrl,
        payment: { signer: await fundedBuyer(), budget: { perCall: '1', total: '1' } },
      });
      const err = await buyer.payAndFetch(fake.url).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentFailedError);
      expect(err).toMatchObject({
        code: 'ASSET_MISMATCH',
        message: expect.stringMatching(
          /shows USDC:G[A-Z2-7]{55} on stellar:testnet, which is contract C[A-Z2-7]{55}, but asks to sign a transfer of contract C/,
        ),
      });
      expect(fake.collected).toHaveLength(0);
      expect(buyer.budget.committed).toBe('0.0000000');
    },
  );

  it(
    'when the live 402 asks more than the inspected terms, the ' + 'buyer refuses before signing (TERMS_CHANGED)',
    async () => {
      fake.mode = 'price-raise';
      fake.collected.length = 0;
      const buyer = createBuyerClient({
        baseUrl: m.baseUrl,
        payment: { signer: await fundedBuyer(), budget: { perCall: '1', total: '1' } },
      });
      const detail = await buyer.resources.get(endpoint.resourceId);
      const expect_ = {
        network: detail.network,
        payTo: detail.paymentRequirements.payTo,
        asset: detail.paymentRequirements.asset.contractId!,
        amount: detail.paymentRequirements.amount,
      };
      const err = await buyer.payAndFetch(fake.url, { expect: expect_ }).catch((e: unknown) => e);
      expect(err).toMatchObject({
        code: 'TERMS_CHANGED',
        message: expect.stringMatching(/amount 0\.09\d*, inspected 0\.05/),
      });
      expect(fake.collected).toHaveLength(0);
      await expect(
        buyer.payAndFetch(fake.url, { expect: { ...expect_, payTo: Keypair.random().publicKey(), amount: '1' } }),
      ).rejects.toMatchObject({ code: 'TERMS_CHANGED', message: expect.stringMatching(/recipient/) });
    },
  );

  it(
    'when a receipt claims another amount, recipient or payer than ' + 'its transaction moved, verifyOnLedger says no',
    async () => {
      const key = await fundedBuyer();
      const buyer = createBuyerClient({
        baseUrl: m.baseUrl,
        payment: { signer: key, budget: { perCall: '1', total: '1' } },
      });
      const url = new URL(endpoint.url.replace('{city}', 'Lisbon'));
      url.hostname = '127.0.0.1';
      const { paid, receipt } = await buyer.payAndFetch(url.toString());
      expect(paid).toBe(true);
      expect(buyer.budget.spent).toBe('0.0500000');
      const stored = await eventually(async () => {
        const r = await buyer.receipts.get(receipt!.receiptId!);
        return r.status === 'settled' ? r : null;
      });
      const good = await buyer.receipts.verifyOnLedger(stored, { payer: key.publicKey() });
      expect(good).toMatchObject({
        ok: true,
        checked: ['asset', 'amount', 'payer', 'payTo'],
        transfer: { from: key.publicKey(), to: endpoint.wallet.publicKey(), amount: '500000' },
      });
      const rpcUrl = m.network.rpcUrl;
      await expect(verifyReceiptOnLedger({ ...stored, amount: '0.5' }, rpcUrl)).resolves.toMatchObject({
        ok: false,
        reason: expect.stringMatching(/no transfer event matches/),
      });
      await expect(
        verifyReceiptOnLedger({ ...stored, payTo: Keypair.random().publicKey() }, rpcUrl),
      ).resolves.toMatchObject({ ok: false });
      await expect(
        verifyReceiptOnLedger({ ...stored, payer: Keypair.random().publicKey() }, rpcUrl),
      ).resolves.toMatchObject({ ok: false });
      await expect(
        verifyReceiptOnLedger({ ...stored, assetCode: 'XLM', assetIssuer: undefined }, rpcUrl),
      ).resolves.toMatchObject({ ok: false });
    },
  );

  it(
    'configuration mistakes fail at creation with a message naming the field; a missing wallet rejects the ' +
      'promise',
    async () => {
      expect(() =>
        createBuyerClient({ baseUrl: m.baseUrl, payment: { signer: Keypair.random(), budget: { total: '1,5' } } }),
      ).toThrow(/budget\.total must be a decimal amount .* "1,5"/);
      expect(() =>
        createBuyerClient({
          baseUrl: m.baseUrl,
          payment: { signer: Keypair.random(), budget: { perCall: 0.5 as unknown as string } },
        }),
      ).toThrow(/budget\.perCall must be a decimal string/);
      const badSecret = 'SBADSECRETxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx';
      let message = '';
      try {
        createBuyerClient({ baseUrl: m.baseUrl, payment: { signer: badSecret } });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/payment\.signer is not a Stellar secret seed/);
      expect(message).not.toContain(badSecret);
      const noWallet = createBuyerClient({ baseUrl: m.baseUrl });
      let pending: Promise<unknown> | null = null;
      expect(() => (pending = noWallet.payAndFetch(fake.url))).not.toThrow();
      await expect(pending).rejects.toThrow(/needs the client option `payment`/);
    },
  );
});
