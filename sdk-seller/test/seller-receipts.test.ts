/**
 * Seller-signed receipts (issue #20, "receipts a buyer can check without trusting us"): the seller creates its own
 * receipt key, registers the public half with the marketplace, and its paywall signs an x402 offer-and-receipt
 * receipt for each confirmed sale. The buyer verifies it against the seller's published keys, separately from the
 * marketplace's keys, and the transfer itself on the ledger. Real marketplace, local network, real signatures.
 */
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, createReceiptKey, createReceiptSigner, paywall, ApiError } from '../src';
import { attestationOf, createBuyerClient, sellerReceiptOf, verifyAttestation, verifySellerReceipt } from '../../sdk-buyer/src';
import { eventually, listen, startMarketplace, type Marketplace } from '../../test/support/marketplace';

describe('seller receipts signed with the seller key, published by the marketplace', () => {
  let m: Marketplace;
  let sellerId: string;
  let apiKey: string;
  let wallet: Keypair;
  let shopUrl: string;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    m = await startMarketplace();
    wallet = Keypair.random();
    await m.network.fundAccount(wallet.publicKey());
    await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    const created = await signup.sellers.signUp({ displayName: 'Signing Shop', domain: 'signing-shop.test', wallet });
    sellerId = created.seller.id;
    apiKey = created.apiKey;
  });
  afterAll(async () => {
    await stop?.();
    await m?.stop();
  });

  it('a seller registers its receipt key; its paywall signs each sale; the buyer verifies it with the seller keys, not the marketplace keys', async () => {
    const seller = createSellerClient({ baseUrl: m.baseUrl, apiKey });
    const key = await createReceiptKey();
    const published = await seller.sellers.receiptKeys.publish(sellerId, { keys: [key.publicJwk] });
    expect(published).toMatchObject({ sellerId, keys: [{ kty: 'OKP', crv: 'Ed25519', x: key.publicJwk.x, kid: key.kid }], updatedAt: expect.any(String) });
    expect(JSON.stringify(published)).not.toContain(String(key.privateJwk.d));

    const usdc = m.network.assets.find((a) => a.code === 'USDC')!;
    const state = { resourceId: '' };
    const receiptSigner = await createReceiptSigner(key.privateJwk);
    const app = express();
    app.get('/paid', (req, res, next) => paywall({ client: seller, resourceId: state.resourceId, receiptSigner })(req, res, next), (_req, res) => res.json({ ok: true }));
    const h = await listen(app);
    stop = h.close;
    shopUrl = `http://127.0.0.1:${h.port}/paid`;
    const cataloged = await seller.catalog.catalog({
      sellerId,
      resource: { type: 'http', name: 'Signed data', description: 'Paid data with seller-signed receipts', url: `http://signing-shop.test:${h.port}/paid`, routeTemplate: '/paid', network: 'stellar:testnet', payTo: wallet.publicKey(), assetCode: 'USDC', assetIssuer: usdc.issuer, amount: '0.05', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } },
    });
    state.resourceId = cataloged.resourceId;

    const payerKey = Keypair.random();
    await m.network.fundAccount(payerKey.publicKey());
    await m.network.faucet(payerKey.publicKey(), 'USDC', '1');
    const buyer = createBuyerClient({ baseUrl: m.baseUrl, payment: { signer: payerKey, budget: { perCall: '0.1', total: '1' } } });
    const { paid, receipt } = await buyer.payAndFetch(shopUrl);
    expect(paid).toBe(true);

    const sellerReceipt = sellerReceiptOf(receipt);
    expect(sellerReceipt).toMatchObject({ format: 'jws', signature: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/) });
    const sellerKeys = await buyer.sellers.receiptKeys(sellerId);
    const checked = await verifySellerReceipt(sellerReceipt, sellerKeys);
    expect(checked).toEqual({ valid: true, kid: key.kid, payload: { version: 1, network: 'stellar:testnet', resourceUrl: shopUrl, payer: payerKey.publicKey(), issuedAt: expect.any(Number), transaction: receipt!.transactionHash } });

    // The marketplace's keys do not verify the seller's receipt, and a changed payload does not verify at all.
    await expect(verifySellerReceipt(sellerReceipt, await buyer.marketplaceKeys())).resolves.toEqual({ valid: false, reason: 'unknown_key' });
    const [h64, , s64] = sellerReceipt!.signature.split('.');
    const forged = Buffer.from(JSON.stringify({ version: 1, network: 'stellar:testnet', resourceUrl: shopUrl, payer: Keypair.random().publicKey(), issuedAt: 1, transaction: receipt!.transactionHash })).toString('base64url');
    await expect(verifySellerReceipt({ format: 'jws', signature: `${h64}.${forged}.${s64}` }, sellerKeys)).resolves.toEqual({ valid: false, reason: 'bad_signature' });

    // The marketplace's attestation is a separate document, verified with the marketplace's keys only.
    const attestation = attestationOf(receipt);
    const attested = await verifyAttestation(attestation, await buyer.marketplaceKeys());
    expect(attested).toMatchObject({ valid: true, payload: { kind: 'facilitator-attestation', version: 1, transaction: receipt!.transactionHash, payer: payerKey.publicKey(), payTo: wallet.publicKey(), amount: '500000', asset: usdc.contractId } });
    await expect(verifyAttestation(attestation, sellerKeys)).resolves.toEqual({ valid: false, reason: 'unknown_key' });
    await expect(verifyAttestation(sellerReceipt!.signature, sellerKeys)).resolves.toEqual({ valid: false, reason: 'wrong_type' });

    // And the ledger agrees with what the seller signed.
    const stored = await eventually(async () => {
      const r = await buyer.receipts.get(receipt!.receiptId!);
      return r.status === 'settled' ? r : null;
    });
    await expect(buyer.receipts.verifyOnLedger(stored, { payer: checked.valid ? checked.payload.payer : undefined })).resolves.toMatchObject({ ok: true, checked: ['asset', 'amount', 'payer', 'payTo'] });
  });

  it('receipt keys: private material, malformed keys and duplicate kids are refused; only the seller (or the operator) may publish; anyone may read', async () => {
    const seller = createSellerClient({ baseUrl: m.baseUrl, apiKey });
    const key = await createReceiptKey();
    const refuse = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as ApiError);
    expect(await refuse(seller.sellers.receiptKeys.publish(sellerId, { keys: [key.privateJwk as never] }))).toMatchObject({ status: 400, code: 'INVALID_REQUEST' });
    expect(await refuse(seller.sellers.receiptKeys.publish(sellerId, { keys: [{ ...key.publicJwk, x: 'A'.repeat(42) + 'B' }, key.publicJwk] }))).toMatchObject({ status: 400 });
    expect(await refuse(seller.sellers.receiptKeys.publish(sellerId, { keys: [key.publicJwk, { ...key.publicJwk }] }))).toMatchObject({ status: 400, message: expect.stringMatching(/appears twice/) });
    expect(await refuse(createSellerClient({ baseUrl: m.baseUrl }).sellers.receiptKeys.publish(sellerId, { keys: [key.publicJwk] }))).toMatchObject({ status: 401 });
    const other = Keypair.random();
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    const intruder = await signup.sellers.signUp({ displayName: 'Intruder', domain: 'intruder-shop.test', wallet: other });
    expect(await refuse(signup.withApiKey(intruder.apiKey).sellers.receiptKeys.publish(sellerId, { keys: [key.publicJwk] }))).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    await expect(createSellerClient({ baseUrl: m.baseUrl }).sellers.receiptKeys.get(intruder.seller.id)).resolves.toEqual({ sellerId: intruder.seller.id, keys: [], updatedAt: null });
    expect(await refuse(createSellerClient({ baseUrl: m.baseUrl }).sellers.receiptKeys.get('sel_01JD6Y2B7C4D5E6F7G8H9J0K1M'))).toMatchObject({ status: 404 });
  });
});
