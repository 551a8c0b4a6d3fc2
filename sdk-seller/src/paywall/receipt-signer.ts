/**
 * The seller's own receipts, in the x402 offer-and-receipt format (specs/extensions/extension-offer-and-receipt.md
 * of coinbase/x402, §5): after a confirmed sale the paywall signs `{version: 1, network, resourceUrl, payer,
 * issuedAt, transaction}` as a compact JWS (`alg: EdDSA`, `kid`: the key's RFC 7638 thumbprint) with a receipt key
 * that belongs to the seller, not to the marketplace, and returns it in the SettlementResponse as
 * `extensions["offer-receipt"].info.receipt = {format: "jws", signature}`.
 *
 * The key's PUBLIC half is registered with the marketplace (`PUT /v1/sellers/{sellerId}/receipt-keys`, a JWK Set,
 * needs the seller's admin key) and published at `GET /v1/sellers/{sellerId}/receipt-keys` (public), where buyers
 * fetch it: a receipt verified with it was signed by the seller of that listing (signer authorization, §4.5.1:
 * "external key registry"). The private half stays on the paywall host; it can sign receipts and nothing else.
 * Publishing a new key needs a proof of possession (receiptKeyProof, signed by `receiptKeys.publish` for you), and
 * a key belongs to one seller.
 *
 * The receipt binds the seller's OWN terms, never anything of the request: `resourceUrl` is the resource URL the
 * seller configured (the cataloged `url`, or `requirements.resource` given to the paywall; a route template such as
 * `https://shop.example/v1/forecast/{city}` stays a template), and besides the offer-and-receipt fields it carries
 * the terms the buyer paid: `scheme`, `amount` (atomic units, stroops), `asset` (the asset's contract id) and
 * `payTo`, as in the spec's signed offer (§4.2).
 */
import crypto from 'node:crypto';
import { CompactSign, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';

export interface ReceiptPayload {
  version: 1;
  network: string;
  /** The resource URL the seller configured (never taken from the request's Host header). */
  resourceUrl: string;
  payer: string;
  issuedAt: number;
  transaction?: string;
  scheme: 'exact';
  /** Atomic units (stroops), as in x402 v2 requirements. */
  amount: string;
  /** The asset's contract id (C...). */
  asset: string;
  payTo: string;
}

export interface ReceiptSigner {
  kid: string;
  /** The compact JWS of the payload. */
  sign(payload: ReceiptPayload): Promise<string>;
}

export interface ReceiptKey {
  kid: string;
  /** Keep secret (an environment variable or a secrets manager on the paywall host). */
  privateJwk: JWK;
  /** What to register: `seller.sellers.receiptKeys.publish(sellerId, { keys: [publicJwk] })`. */
  publicJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string; kid: string; alg: 'EdDSA'; use: 'sig' };
}

/** A new Ed25519 receipt key. */
export async function createReceiptKey(): Promise<ReceiptKey> {
  const { privateKey, publicKey } = await generateKeyPair('Ed25519', { extractable: true });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub);
  return {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid },
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x: String(pub.x), kid, alg: 'EdDSA', use: 'sig' },
  };
}

/** A signer for the paywall (`paywall({ receiptSigner })`, `paidTool(..., { receiptSigner })`) from the private JWK. */
export async function createReceiptSigner(privateJwk: JWK): Promise<ReceiptSigner> {
  if (!privateJwk || privateJwk.kty !== 'OKP' || privateJwk.crv !== 'Ed25519' || typeof privateJwk.d !== 'string') {
    throw new TypeError(
      'createReceiptSigner needs the private Ed25519 JWK of createReceiptKey() (kty OKP, crv Ed25519, with d)',
    );
  }
  const { d: _d, ...pub } = privateJwk;
  const kid = privateJwk.kid ?? (await calculateJwkThumbprint(pub));
  const key = await importJWK({ ...privateJwk, alg: 'EdDSA' }, 'EdDSA');
  return {
    kid,
    async sign(payload: ReceiptPayload): Promise<string> {
      const body = new TextEncoder().encode(
        JSON.stringify({
          version: 1,
          network: payload.network,
          resourceUrl: payload.resourceUrl,
          payer: payload.payer,
          issuedAt: payload.issuedAt,
          ...(payload.transaction ? { transaction: payload.transaction } : {}),
          scheme: payload.scheme,
          amount: payload.amount,
          asset: payload.asset,
          payTo: payload.payTo,
        }),
      );
      return new CompactSign(body).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'x402-receipt+jws' }).sign(key);
    },
  };
}

/** A proof that the publisher holds a receipt key's private half, for `PUT /v1/sellers/{sellerId}/receipt-keys`. */
export interface ReceiptKeyProof {
  kid: string;
  /** Compact JWS, typ `x402-receipt-key-proof+jws`, over `{purpose, sellerId, kid, x, nonce, iat}`. */
  signature: string;
}

/**
 * Signs the proof of possession of a receipt key for one seller (valid 5 minutes; each has a fresh nonce). Only the
 * signature leaves: the private JWK never does. `receiptKeys.publish` calls it for every key given with its private
 * half.
 */
export async function receiptKeyProof(privateJwk: JWK, sellerId: string): Promise<ReceiptKeyProof> {
  if (
    !privateJwk ||
    privateJwk.kty !== 'OKP' ||
    privateJwk.crv !== 'Ed25519' ||
    typeof privateJwk.d !== 'string' ||
    typeof privateJwk.x !== 'string'
  ) {
    throw new TypeError(
      'receiptKeyProof needs the private Ed25519 JWK of createReceiptKey() (kty OKP, crv Ed25519, with d)',
    );
  }
  const { d: _d, ...pub } = privateJwk;
  const kid = privateJwk.kid ?? (await calculateJwkThumbprint(pub));
  const key = await importJWK({ ...privateJwk, alg: 'EdDSA' }, 'EdDSA');
  const payload = {
    purpose: 'seller-receipt-key-proof',
    sellerId,
    kid,
    x: privateJwk.x,
    nonce: crypto.randomBytes(24).toString('base64url'),
    iat: Math.floor(Date.now() / 1000),
  };
  const signature = await new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'x402-receipt-key-proof+jws' })
    .sign(key);
  return { kid, signature };
}
