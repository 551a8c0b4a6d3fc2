/**
 * Seller-signed receipts (issue #20, "receipts a buyer can check without trusting us"): the seller creates its own
 * receipt key, registers the public half with the marketplace, and its paywall signs an x402 offer-and-receipt
 * receipt for each confirmed sale. The buyer verifies it against the seller's published keys, separately from the
 * marketplace's keys, and the transfer itself on the ledger. Real marketplace, local network, real signatures.
 *
 * Issue #29 (items 10 and 11): the receipt binds the seller's own terms (configured URL, amount, asset, network,
 * payTo), never the Host header the buyer sent; publishing a receipt key needs a proof of possession, and a key
 * belongs to one seller.
 */
import http from 'node:http';
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, createReceiptKey, createReceiptSigner, receiptKeyProof, paywall, ApiError } from '../src';
import { CompactSign, importJWK } from 'jose';
import {
  attestationOf,
  createBuyerClient,
  sellerReceiptOf,
  verifyAttestation,
  verifySellerReceipt,
} from '../../sdk-buyer/src';
import { eventually, listen, startMarketplace, type Marketplace } from '../../test/support/marketplace';

/** A fetch for the paid call: sends the request (no body) to 127.0.0.1, the seller's app, with the Host header `host`,
 * whatever the URL. */
function fetchWithHost(host: string): typeof globalThis.fetch {
  return (input, init) => {
    const request = new Request(input as RequestInfo, init);
    const url = new URL(request.url);
    return new Promise<Response>((resolve, reject) => {
      const headers: Record<string, string> = { ...Object.fromEntries(request.headers), host };
      const req = http.request(
        { hostname: '127.0.0.1', port: url.port, path: url.pathname + url.search, method: request.method, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
            resolve(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: h }));
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  };
}

describe('seller receipts signed with the seller key, published by the marketplace', () => {
  let m: Marketplace;
  let sellerId: string;
  let apiKey: string;
  let wallet: Keypair;
  let shopUrl: string;
  let catalogedUrl: string;
  let receiptKey: Awaited<ReturnType<typeof createReceiptKey>>;
  let usdcContract: string;
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

  it(
    'a seller registers its receipt key; its paywall signs each sale; the buyer verifies it with the seller ' +
      'keys, not the marketplace keys',
    async () => {
      const seller = createSellerClient({ baseUrl: m.baseUrl, apiKey });
      const key = (receiptKey = await createReceiptKey());
      const published = await seller.sellers.receiptKeys.publish(sellerId, { keys: [key] });
      expect(published).toMatchObject({
        sellerId,
        keys: [{ kty: 'OKP', crv: 'Ed25519', x: key.publicJwk.x, kid: key.kid }],
        updatedAt: expect.any(String),
      });
      expect(JSON.stringify(published)).not.toContain(String(key.privateJwk.d));

      const usdc = m.network.assets.find((a) => a.code === 'USDC')!;
      usdcContract = usdc.contractId;
      const state = { resourceId: '' };
      const receiptSigner = await createReceiptSigner(key.privateJwk);
      const app = express();
      app.get(
        '/paid',
        (req, res, next) => paywall({ client: seller, resourceId: state.resourceId, receiptSigner })(req, res, next),
        (_req, res) => res.json({ ok: true }),
      );
      const h = await listen(app);
      stop = h.close;
      shopUrl = `http://127.0.0.1:${h.port}/paid`;
      catalogedUrl = `http://signing-shop.test:${h.port}/paid`;
      const cataloged = await seller.catalog.catalog({
        sellerId,
        resource: {
          type: 'http',
          name: 'Signed data',
          description: 'Paid data with seller-signed receipts',
          url: catalogedUrl,
          routeTemplate: '/paid',
          network: 'stellar:testnet',
          payTo: wallet.publicKey(),
          assetCode: 'USDC',
          assetIssuer: usdc.issuer,
          amount: '0.05',
          inputSchema: { type: 'object' },
          outputSchema: { type: 'object' },
        },
      });
      state.resourceId = cataloged.resourceId;

      const payerKey = Keypair.random();
      await m.network.fundAccount(payerKey.publicKey());
      await m.network.faucet(payerKey.publicKey(), 'USDC', '1');
      const buyer = createBuyerClient({
        baseUrl: m.baseUrl,
        payment: { signer: payerKey, budget: { perCall: '0.1', total: '1' } },
      });
      const { paid, receipt, receiptTerms } = await buyer.payAndFetch(catalogedUrl, {
        fetch: fetchWithHost(`signing-shop.test:${new URL(shopUrl).port}`),
      });
      expect(paid).toBe(true);

      const sellerReceipt = sellerReceiptOf(receipt);
      expect(sellerReceipt).toMatchObject({
        format: 'jws',
        signature: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      });
      const sellerKeys = await buyer.sellers.receiptKeys(sellerId);
      const checked = await verifySellerReceipt(sellerReceipt, sellerKeys, receiptTerms!);
      expect(checked).toEqual({
        valid: true,
        kid: key.kid,
        payload: {
          version: 1,
          network: 'stellar:testnet',
          resourceUrl: catalogedUrl,
          payer: payerKey.publicKey(),
          issuedAt: expect.any(Number),
          transaction: receipt!.transactionHash,
          scheme: 'exact',
          amount: '500000',
          asset: usdc.contractId,
          payTo: wallet.publicKey(),
        },
      });

      // The marketplace's keys do not verify the seller's receipt, and a changed payload does not verify at all.
      await expect(verifySellerReceipt(sellerReceipt, await buyer.marketplaceKeys(), receiptTerms!)).resolves.toEqual({
        valid: false,
        reason: 'unknown_key',
      });
      const [h64, , s64] = sellerReceipt!.signature.split('.');
      const forged = Buffer.from(
        JSON.stringify({
          version: 1,
          network: 'stellar:testnet',
          resourceUrl: catalogedUrl,
          payer: Keypair.random().publicKey(),
          issuedAt: 1,
          transaction: receipt!.transactionHash,
        }),
      ).toString('base64url');
      await expect(
        verifySellerReceipt({ format: 'jws', signature: `${h64}.${forged}.${s64}` }, sellerKeys, receiptTerms!),
      ).resolves.toEqual({ valid: false, reason: 'bad_signature' });

      // The marketplace's attestation is a separate document, verified with the marketplace's keys only.
      const attestation = attestationOf(receipt);
      const attested = await verifyAttestation(attestation, await buyer.marketplaceKeys());
      expect(attested).toMatchObject({
        valid: true,
        payload: {
          kind: 'facilitator-attestation',
          version: 1,
          transaction: receipt!.transactionHash,
          payer: payerKey.publicKey(),
          payTo: wallet.publicKey(),
          amount: '500000',
          asset: usdc.contractId,
        },
      });
      await expect(verifyAttestation(attestation, sellerKeys)).resolves.toEqual({
        valid: false,
        reason: 'unknown_key',
      });
      await expect(verifyAttestation(sellerReceipt!.signature, sellerKeys)).resolves.toEqual({
        valid: false,
        reason: 'wrong_type',
      });

      // And the ledger agrees with what the seller signed.
      const stored = await eventually(async () => {
        const r = await buyer.receipts.get(receipt!.receiptId!);
        return r.status === 'settled' ? r : null;
      });
      await expect(
        buyer.receipts.verifyOnLedger(stored, { payer: checked.valid ? checked.payload.payer : undefined }),
      ).resolves.toMatchObject({ ok: true, checked: ['asset', 'amount', 'payer', 'payTo'] });
    },
  );

  it(
    'receipt keys: private material, malformed keys and duplicate kids are refused; only the seller (or the ' +
      'operator) may publish; anyone may read',
    async () => {
      const seller = createSellerClient({ baseUrl: m.baseUrl, apiKey });
      const key = await createReceiptKey();
      const refuse = (p: Promise<unknown>) =>
        p.then(
          () => null,
          (e: unknown) => e as ApiError,
        );
      expect(
        await refuse(seller.sellers.receiptKeys.publish(sellerId, { keys: [key.privateJwk as never] })),
      ).toMatchObject({ status: 400, code: 'INVALID_REQUEST' });
      expect(
        await refuse(
          seller.sellers.receiptKeys.publish(sellerId, {
            keys: [{ ...key.publicJwk, x: 'A'.repeat(42) + 'B' }, key.publicJwk],
          }),
        ),
      ).toMatchObject({ status: 400 });
      expect(
        await refuse(seller.sellers.receiptKeys.publish(sellerId, { keys: [key.publicJwk, { ...key.publicJwk }] })),
      ).toMatchObject({ status: 400, message: expect.stringMatching(/appears twice/) });
      expect(
        await refuse(
          createSellerClient({ baseUrl: m.baseUrl }).sellers.receiptKeys.publish(sellerId, { keys: [key.publicJwk] }),
        ),
      ).toMatchObject({ status: 401 });
      const other = Keypair.random();
      const signup = createSellerClient({ baseUrl: m.baseUrl });
      const intruder = await signup.sellers.signUp({
        displayName: 'Intruder',
        domain: 'intruder-shop.test',
        wallet: other,
      });
      expect(
        await refuse(
          signup.withApiKey(intruder.apiKey).sellers.receiptKeys.publish(sellerId, { keys: [key.publicJwk] }),
        ),
      ).toMatchObject({ status: 403, code: 'FORBIDDEN' });
      await expect(
        createSellerClient({ baseUrl: m.baseUrl }).sellers.receiptKeys.get(intruder.seller.id),
      ).resolves.toEqual({ sellerId: intruder.seller.id, keys: [], updatedAt: null });
      expect(
        await refuse(
          createSellerClient({ baseUrl: m.baseUrl }).sellers.receiptKeys.get('sel_01JD6Y2B7C4D5E6F7G8H9J0K1M'),
        ),
      ).toMatchObject({ status: 404 });
    },
  );

  it('a seller receipt binds the configured URL, amount, asset, network and payTo, not the Host header', async () => {
    const payerKey = Keypair.random();
    await m.network.fundAccount(payerKey.publicKey());
    await m.network.faucet(payerKey.publicKey(), 'USDC', '1');
    // The buyer (or anything between it and the seller) sends another company's name as Host.
    const buyer = createBuyerClient({
      baseUrl: m.baseUrl,
      payment: { signer: payerKey, budget: { perCall: '0.1', total: '1' } },
    });
    const { paid, receipt, receiptTerms } = await buyer.payAndFetch(catalogedUrl, {
      fetch: fetchWithHost('payments.victim-company.example'),
    });
    expect(paid).toBe(true);
    const sellerReceipt = sellerReceiptOf(receipt)!;
    const payload = JSON.parse(
      Buffer.from(sellerReceipt.signature.split('.')[1], 'base64url').toString('utf8'),
    ) as Record<string, unknown>;
    expect(JSON.stringify(payload)).not.toContain('victim-company');
    expect(payload).toMatchObject({
      resourceUrl: catalogedUrl,
      network: 'stellar:testnet',
      scheme: 'exact',
      amount: '500000',
      asset: usdcContract,
      payTo: wallet.publicKey(),
      payer: payerKey.publicKey(),
      transaction: receipt!.transactionHash,
    });

    const keys = await buyer.sellers.receiptKeys(sellerId);
    expect(await verifySellerReceipt(sellerReceipt, keys, receiptTerms!)).toMatchObject({
      valid: true,
      kid: receiptKey.kid,
    });
    // The buyer's check holds the receipt to what it paid: any other URL, amount, asset, network or payTo is refused.
    const other = Keypair.random().publicKey();
    const cases: Array<[string, Partial<typeof receiptTerms>]> = [
      ['resourceUrl', { url: 'http://payments.victim-company.example/paid' }],
      ['amount', { amount: '400000' }],
      ['asset', { asset: m.network.assets.find((a) => a.code !== 'USDC')?.contractId ?? 'CXXX' }],
      ['network', { network: 'stellar:pubnet' }],
      ['payTo', { payTo: other }],
      ['payer', { payer: other }],
    ];
    for (const [field, change] of cases) {
      expect(await verifySellerReceipt(sellerReceipt, keys, { ...receiptTerms!, ...change })).toMatchObject({
        valid: false,
        reason: 'terms_mismatch',
        field,
      });
    }
    // A receipt in the old shape (no amount, asset or payTo), even correctly signed, does not verify as a receipt for
    // this payment.
    const legacy = await new CompactSign(
      new TextEncoder().encode(
        JSON.stringify({
          version: 1,
          network: 'stellar:testnet',
          resourceUrl: catalogedUrl,
          payer: payerKey.publicKey(),
          issuedAt: 1,
        }),
      ),
    )
      .setProtectedHeader({ alg: 'EdDSA', kid: receiptKey.kid })
      .sign(await importJWK({ ...receiptKey.privateJwk, alg: 'EdDSA' }, 'EdDSA'));
    expect(await verifySellerReceipt(legacy, keys, receiptTerms!)).toMatchObject({
      valid: false,
      reason: 'terms_mismatch',
      field: 'amount',
    });
  });

  it("a seller cannot publish another seller's receipt key", async () => {
    const refuse = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => e as ApiError,
      );
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    const thief = await signup.sellers.signUp({
      displayName: 'Receipt Thief',
      domain: 'receipt-thief.test',
      wallet: Keypair.random(),
    });
    const thiefClient = signup.withApiKey(thief.apiKey);
    const victimKey = receiptKey.publicJwk;

    // The victim's public key as is: no proof of possession.
    expect(await refuse(thiefClient.sellers.receiptKeys.publish(thief.seller.id, { keys: [victimKey] }))).toMatchObject(
      { status: 400, code: 'INVALID_REQUEST' },
    );
    // A proof signed with the thief's own key, relabelled for the victim's key: it does not verify with that key.
    const own = await createReceiptKey();
    const ownProof = await receiptKeyProof(own.privateJwk, thief.seller.id);
    expect(
      await refuse(
        thiefClient.sellers.receiptKeys.publish(thief.seller.id, {
          keys: [victimKey],
          proofs: [{ ...ownProof, kid: victimKey.kid }],
        }),
      ),
    ).toMatchObject({ status: 422, code: 'INVALID_SIGNATURE' });
    // A genuine proof the victim made for ITSELF (seen in transit): it names the victim, not the thief.
    const victimProof = await receiptKeyProof(receiptKey.privateJwk, sellerId);
    expect(
      await refuse(
        thiefClient.sellers.receiptKeys.publish(thief.seller.id, { keys: [victimKey], proofs: [victimProof] }),
      ),
    ).toMatchObject({ status: 422, code: 'INVALID_SIGNATURE' });
    // Even holding the private half (a key shared or leaked): a key belongs to one seller.
    expect(
      await refuse(thiefClient.sellers.receiptKeys.publish(thief.seller.id, { keys: [receiptKey] })),
    ).toMatchObject({ status: 409, code: 'CONFLICT' });
    // A re-encoded x (same 32 bytes, other unused trailing bits) is not a way around it.
    const last = victimKey.x.slice(-1);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = {
      ...victimKey,
      kid: 'respelled',
      x: victimKey.x.slice(0, -1) + alphabet[alphabet.indexOf(last) ^ 1],
    };
    expect(await refuse(thiefClient.sellers.receiptKeys.publish(thief.seller.id, { keys: [respelled] }))).toMatchObject(
      { status: 400, code: 'INVALID_REQUEST' },
    );

    // Nothing changed: the thief publishes nothing, the victim keeps its key.
    await expect(signup.sellers.receiptKeys.get(thief.seller.id)).resolves.toMatchObject({ keys: [] });
    await expect(signup.sellers.receiptKeys.get(sellerId)).resolves.toMatchObject({
      keys: [{ x: victimKey.x, kid: victimKey.kid }],
    });
    // Its own key, with its proof, it may publish.
    await expect(thiefClient.sellers.receiptKeys.publish(thief.seller.id, { keys: [own] })).resolves.toMatchObject({
      keys: [{ x: own.publicJwk.x }],
    });
  });

  it('publishing a key without proof of possession is refused', async () => {
    const refuse = (p: Promise<unknown>) =>
      p.then(
        () => null,
        (e: unknown) => e as ApiError,
      );
    const seller = createSellerClient({ baseUrl: m.baseUrl, apiKey });
    const fresh = await createReceiptKey();
    const before = await seller.sellers.receiptKeys.get(sellerId);

    // New key, public half only: refused, naming the missing proof.
    expect(
      await refuse(seller.sellers.receiptKeys.publish(sellerId, { keys: [receiptKey.publicJwk, fresh.publicJwk] })),
    ).toMatchObject({ status: 400, code: 'INVALID_REQUEST', message: expect.stringMatching(/proof of possession/) });
    // A proof signed long ago (iat 10 minutes back): refused AUTH_EXPIRED.
    const sign = async (payload: Record<string, unknown>) =>
      new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
        .setProtectedHeader({ alg: 'EdDSA', kid: fresh.kid, typ: 'x402-receipt-key-proof+jws' })
        .sign(await importJWK({ ...fresh.privateJwk, alg: 'EdDSA' }, 'EdDSA'));
    const base = {
      purpose: 'seller-receipt-key-proof',
      sellerId,
      kid: fresh.kid,
      x: fresh.publicJwk.x,
      nonce: 'n0nce-n0nce-n0nce-1234',
    };
    const old = await sign({ ...base, iat: Math.floor(Date.now() / 1000) - 600 });
    expect(
      await refuse(
        seller.sellers.receiptKeys.publish(sellerId, {
          keys: [fresh.publicJwk],
          proofs: [{ kid: fresh.kid, signature: old }],
        }),
      ),
    ).toMatchObject({ status: 422, code: 'AUTH_EXPIRED' });
    // A signature over something else than the proof statement (another purpose): refused.
    const other = await sign({ ...base, purpose: 'login', iat: Math.floor(Date.now() / 1000) });
    expect(
      await refuse(
        seller.sellers.receiptKeys.publish(sellerId, {
          keys: [fresh.publicJwk],
          proofs: [{ kid: fresh.kid, signature: other }],
        }),
      ),
    ).toMatchObject({ status: 422, code: 'INVALID_SIGNATURE' });
    await expect(seller.sellers.receiptKeys.get(sellerId)).resolves.toEqual(before);

    // With the key itself, the SDK proves possession; a key already published stays without a new proof.
    const rotated = await seller.sellers.receiptKeys.publish(sellerId, { keys: [receiptKey.publicJwk, fresh] });
    expect(rotated.keys.map((k) => k.kid)).toEqual([receiptKey.kid, fresh.kid]);
  });
});
