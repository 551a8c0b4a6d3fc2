/**
 * GENERATED FILE: DO NOT EDIT. Source: sdk-buyer/src/receipts/jws.ts, copied by scripts/generate.mjs.
 * Change the source and run `npm run generate` (`npm run check:generated` fails when this copy differs).
 */
/**
 * The one check of a signed document (compact JWS, EdDSA / Ed25519) of the SDKs and the server: size, the protected
 * header's `typ`, the signature against a JWK Set, then the payload's shape. One source: sdk-buyer/src/receipts,
 * copied into sdk-seller/src/receipts and into server/src/domain/receipts by scripts/generate.mjs.
 * Offline: the JWK Set is given (fetch it once and keep it).
 */
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';

/** Longer inputs are refused before any parsing (a signed document of ours is well under 2 KiB). */
export const MAX_JWS_LENGTH = 8192;

/** Why a signed document does not verify, or its kid and payload when it does. */
export type SignedDocumentCheck<P> =
  | { valid: true; kid: string; payload: P }
  | { valid: false; reason: 'malformed' | 'unknown_key' | 'bad_signature' | 'bad_payload' | 'wrong_type' }
  | { valid: false; reason: 'terms_mismatch'; field: string; message: string };

/** The payload of a compact JWS as JSON WITHOUT checking the signature, or null. */
export function decodeJwsPayload(jws: unknown): unknown {
  if (typeof jws !== 'string' || jws.length > MAX_JWS_LENGTH) return null;
  try {
    return JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

/**
 * Verifies a compact JWS against `jwks`, offline: EdDSA only; the protected header's `typ` must be `typ` (null: any);
 * the payload must be JSON that `check` accepts. Never throws for a bad document: it says why.
 */
export async function verifyJws<P>(
  jws: unknown,
  jwks: JSONWebKeySet,
  typ: string | null,
  check: (p: unknown) => p is P,
): Promise<SignedDocumentCheck<P>> {
  if (typeof jws !== 'string' || jws.length > MAX_JWS_LENGTH || jws.split('.').length !== 3)
    return { valid: false, reason: 'malformed' };
  try {
    const header = decodeProtectedHeader(jws);
    if (typ !== null && header.typ !== typ) return { valid: false, reason: 'wrong_type' };
  } catch {
    return { valid: false, reason: 'malformed' };
  }
  let result;
  try {
    result = await compactVerify(jws, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_JWKS_NO_MATCHING_KEY' || code === 'ERR_JWKS_MULTIPLE_MATCHING_KEYS')
      return { valid: false, reason: 'unknown_key' };
    if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return { valid: false, reason: 'bad_signature' };
    return { valid: false, reason: 'malformed' };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(result.payload));
  } catch {
    return { valid: false, reason: 'bad_payload' };
  }
  if (!check(payload)) return { valid: false, reason: 'bad_payload' };
  return { valid: true, kid: String(result.protectedHeader.kid ?? ''), payload };
}
