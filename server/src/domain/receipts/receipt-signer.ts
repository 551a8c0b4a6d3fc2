import { CompactSign, calculateJwkThumbprint, exportJWK, importJWK, type JWK } from 'jose';
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { ATTESTATION_TYPE, attestationPayload, type AttestationClaims } from './attestation';

/**
 * The facilitator's settlement attestation: what it verified on the ledger, signed. NOT a seller's x402
 * offer-and-receipt receipt (the seller signs those with its own key): a compact JWS, header `{alg: "EdDSA", kid,
 * typ: "x402-facilitator-attestation"}`, payload the JCS-canonical JSON of `{kind: "facilitator-attestation",
 * version, network, transaction, ledger, asset, amount, payer, payTo, issuedAt, resource?, fees?}` (resource only for a
 * cataloged resource: the facilitator attests only what it knows). The type, the header's typ and the payload are
 * defined once, in ./attestation.ts (a committed copy of the SDKs' source, sdk-buyer/src/receipts/attestation.ts):
 * what this module signs is what the SDKs' verifyAttestation accepts. The signing key is Ed25519 (from configuration or
 * generated into the data folder); its public
 * half and the public halves of keys retired by a rotation are published as a JWK Set. The private key never
 * leaves this module: no method returns it and nothing here logs.
 */

/** What an attestation states: the one definition the SDKs verify (./attestation.ts, copied from the SDK). */
export type ReceiptClaims = AttestationClaims;

export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

export interface ReceiptSigner {
  /** The compact JWS of one receipt (deterministic: Ed25519 signatures are). */
  sign(claims: ReceiptClaims): Promise<string>;
  /** The current public key first, then the previous ones. */
  jwks(): { keys: PublicJwk[] };
  kid: string;
}

/** RFC 8785 (JCS) canonical JSON for the plain values a receipt holds (strings, integers, objects). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error('cannot canonicalize a non-finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  throw new Error(`cannot canonicalize a ${typeof value}`);
}

/** A new Ed25519 private key as PKCS#8 PEM (what the data-folder file and RECEIPT_SIGNING_KEY hold). */
export function generateReceiptKeyPem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

async function publicJwkOf(key: KeyObject): Promise<PublicJwk> {
  const jwk = await exportJWK(key);
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || !jwk.x)
    throw new Error('the receipt signing key must be an Ed25519 key');
  const kid = await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: jwk.x });
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid, alg: 'EdDSA', use: 'sig' };
}

/** Parses a list of previous public keys (JWKs): only Ed25519 public keys are kept, a private part is refused. */
export async function parsePreviousKeys(list: unknown): Promise<PublicJwk[]> {
  if (!Array.isArray(list)) throw new Error('previous receipt keys must be a JSON array of JWKs');
  const out: PublicJwk[] = [];
  for (const item of list.slice(0, 100)) {
    const jwk = item as JWK;
    if (!jwk || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string')
      throw new Error('previous receipt keys must be Ed25519 public JWKs');
    if ('d' in jwk) throw new Error('previous receipt keys must be public keys only (no "d")');
    await importJWK({ kty: 'OKP', crv: 'Ed25519', x: jwk.x }, 'EdDSA');
    out.push({
      kty: 'OKP',
      crv: 'Ed25519',
      x: jwk.x,
      kid: await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: jwk.x }),
      alg: 'EdDSA',
      use: 'sig',
    });
  }
  return out;
}

/** The public JWK of a PKCS#8 PEM private key (used when a rotation moves the current key to the previous list). */
export async function publicJwkOfPem(privateKeyPem: string): Promise<PublicJwk> {
  return publicJwkOf(createPublicKey(createPrivateKey(privateKeyPem)));
}

export async function createReceiptSigner(opts: {
  privateKeyPem: string;
  previous?: PublicJwk[];
}): Promise<ReceiptSigner> {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(opts.privateKeyPem);
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('not ed25519');
  } catch {
    // The message never repeats the key material.
    throw new Error('the receipt signing key is not an Ed25519 private key in PKCS#8 PEM');
  }
  const current = await publicJwkOf(createPublicKey(privateKey));
  const previous = (opts.previous ?? []).filter((k) => k.kid !== current.kid);
  const keys = [current, ...previous.filter((k, i) => previous.findIndex((o) => o.kid === k.kid) === i)];
  return {
    kid: current.kid,
    jwks: () => ({ keys: keys.map((k) => ({ ...k })) }),
    async sign(claims) {
      const payload = canonicalJson(attestationPayload(claims));
      return new CompactSign(new TextEncoder().encode(payload))
        .setProtectedHeader({ alg: 'EdDSA', kid: current.kid, typ: ATTESTATION_TYPE })
        .sign(privateKey);
    },
  };
}
