import crypto from 'node:crypto';
import { CompactSign, calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import {
  PROOF_PURPOSE,
  PROOF_TYP,
  keyProofProblem,
  type SellerReceiptJwk,
} from '../../src/domain/sellers/seller-receipt-keys';

/**
 * A seller's proof of possession of a receipt key, checked by the one JWS check (domain/receipts/jws.ts) plus the
 * statement's own rules. Pure: no database, no HTTP (the HTTP-level refusals are in
 * sdk-seller/test/seller-receipts.test.ts).
 */
const SELLER = 'seller_01';
const NOW = new Date('2026-11-27T12:00:00Z');

async function receiptKey(): Promise<{ key: SellerReceiptJwk; privateKey: CryptoKey }> {
  const { privateKey, publicKey } = await generateKeyPair('Ed25519', { extractable: true });
  const pub = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(pub);
  return { key: { kty: 'OKP', crv: 'Ed25519', x: pub.x!, kid }, privateKey };
}

async function sign(
  privateKey: CryptoKey,
  payload: Record<string, unknown>,
  header: Record<string, unknown>,
): Promise<string> {
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'EdDSA', ...header })
    .sign(privateKey);
}

function statement(key: SellerReceiptJwk, over: Record<string, unknown> = {}) {
  return {
    purpose: PROOF_PURPOSE,
    sellerId: SELLER,
    kid: key.kid,
    x: key.x,
    nonce: crypto.randomBytes(24).toString('base64url'),
    iat: Math.floor(NOW.getTime() / 1000),
    ...over,
  };
}

describe('receipt key proof of possession (the shared JWS check)', () => {
  it('a proof signed by the key over this seller, this key and a fresh nonce proves possession', async () => {
    const { key, privateKey } = await receiptKey();
    const signature = await sign(privateKey, statement(key), { kid: key.kid, typ: PROOF_TYP });
    expect(await keyProofProblem({ kid: key.kid, signature }, key, SELLER, NOW)).toBeNull();
  });

  it("a thief's proof signed with its own key, relabelled with the victim's kid, is no signature by it", async () => {
    const victim = await receiptKey();
    const thief = await receiptKey();
    const signature = await sign(thief.privateKey, statement(victim.key), { kid: victim.key.kid, typ: PROOF_TYP });
    expect(await keyProofProblem({ kid: victim.key.kid, signature }, victim.key, SELLER, NOW)).toEqual({
      code: 'INVALID_SIGNATURE',
      message: `is not a signature by the receipt key ${victim.key.kid}`,
    });
  });

  it("a victim's genuine proof for itself, replayed by another seller, names another seller", async () => {
    const { key, privateKey } = await receiptKey();
    const signature = await sign(privateKey, statement(key), { kid: key.kid, typ: PROOF_TYP });
    const problem = await keyProofProblem({ kid: key.kid, signature }, key, 'seller_thief', NOW);
    expect(problem).toMatchObject({ code: 'INVALID_SIGNATURE', message: expect.stringMatching(/^must sign/) });
  });

  it('a JWS of another type, or naming another key in its header, needs the proof header', async () => {
    const { key, privateKey } = await receiptKey();
    const wrongTyp = await sign(privateKey, statement(key), { kid: key.kid, typ: 'JWT' });
    const wrongKid = await sign(privateKey, statement(key), { kid: 'another', typ: PROOF_TYP });
    const header = `needs the protected header {alg: "EdDSA", kid: "${key.kid}", typ: "${PROOF_TYP}"}`;
    for (const signature of [wrongTyp, wrongKid])
      expect(await keyProofProblem({ kid: key.kid, signature }, key, SELLER, NOW)).toEqual({
        code: 'INVALID_SIGNATURE',
        message: header,
      });
  });

  it('something that is not a JWS is refused as such', async () => {
    const { key } = await receiptKey();
    for (const signature of ['not-a-jws', 'a.b.c', ''])
      expect(await keyProofProblem({ kid: key.kid, signature }, key, SELLER, NOW)).toMatchObject({
        code: 'INVALID_SIGNATURE',
        message: 'is not a JWS with a JSON header and payload',
      });
  });

  it('a proof without a fresh random nonce is refused', async () => {
    const { key, privateKey } = await receiptKey();
    const signature = await sign(privateKey, statement(key, { nonce: 'short' }), { kid: key.kid, typ: PROOF_TYP });
    expect(await keyProofProblem({ kid: key.kid, signature }, key, SELLER, NOW)).toMatchObject({
      code: 'INVALID_SIGNATURE',
      message: expect.stringMatching(/nonce/),
    });
  });

  it('a proof signed ten minutes ago is AUTH_EXPIRED', async () => {
    const { key, privateKey } = await receiptKey();
    const iat = Math.floor(NOW.getTime() / 1000) - 600;
    const signature = await sign(privateKey, statement(key, { iat }), { kid: key.kid, typ: PROOF_TYP });
    expect(await keyProofProblem({ kid: key.kid, signature }, key, SELLER, NOW)).toMatchObject({
      code: 'AUTH_EXPIRED',
    });
  });
});
