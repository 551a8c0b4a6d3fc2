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
 */
import { CompactSign, calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';

export interface ReceiptPayload {
  version: 1;
  network: string;
  resourceUrl: string;
  payer: string;
  issuedAt: number;
  transaction?: string;
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
  return { kid, privateJwk: { ...(await exportJWK(privateKey)), kid }, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: String(pub.x), kid, alg: 'EdDSA', use: 'sig' } };
}

/** A signer for the paywall (`paywall({ receiptSigner })`, `paidTool(..., { receiptSigner })`) from the private JWK. */
export async function createReceiptSigner(privateJwk: JWK): Promise<ReceiptSigner> {
  if (!privateJwk || privateJwk.kty !== 'OKP' || privateJwk.crv !== 'Ed25519' || typeof privateJwk.d !== 'string') {
    throw new TypeError('createReceiptSigner needs the private Ed25519 JWK of createReceiptKey() (kty OKP, crv Ed25519, with d)');
  }
  const { d: _d, ...pub } = privateJwk;
  const kid = privateJwk.kid ?? (await calculateJwkThumbprint(pub));
  const key = await importJWK({ ...privateJwk, alg: 'EdDSA' }, 'EdDSA');
  return {
    kid,
    async sign(payload: ReceiptPayload): Promise<string> {
      const body = new TextEncoder().encode(JSON.stringify({ version: 1, network: payload.network, resourceUrl: payload.resourceUrl, payer: payload.payer, issuedAt: payload.issuedAt, ...(payload.transaction ? { transaction: payload.transaction } : {}) }));
      return new CompactSign(body).setProtectedHeader({ alg: 'EdDSA', kid, typ: 'x402-receipt+jws' }).sign(key);
    },
  };
}
