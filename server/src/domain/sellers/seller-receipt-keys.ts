/**
 * A seller's receipt keys: the public Ed25519 keys with which the seller signs its OWN receipts (x402
 * offer-and-receipt, the seller SDK's createReceiptSigner), registered by the seller and published for buyers. The
 * marketplace never holds the private halves and never signs with them; its own signatures (attestations) use the
 * service keys of /.well-known/jwks.json.
 *
 * Two rules (issue #29, item 11) keep a seller from passing another seller's receipts off as its own:
 * - proof of possession: a key new to the seller is published only with a JWS signed by that key over
 *   `{purpose, sellerId, kid, x, nonce, iat}` (this seller, this key, signed within PROOF_WINDOW_S of now);
 * - one seller per key: the repository claims each key (its canonical `x`) for one seller (a primary key), and a key
 *   another seller owns is refused CONFLICT, whoever holds it.
 */
import { decodeProtectedHeader } from 'jose';
import { DomainError } from '../errors';
import { assertActsFor, type Principal } from '../auth/principal';
import { verifyJws } from '../receipts/jws';

export interface SellerReceiptJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg?: 'EdDSA';
  use?: 'sig';
}

export interface SellerReceiptKeysView {
  sellerId: string;
  keys: SellerReceiptJwk[];
  updatedAt: Date | null;
}

interface Deps {
  repository: {
    get(sellerId: string): Promise<{ keys: SellerReceiptJwk[]; updatedAt: Date } | null>;
    /** `{ taken }`: kids of keys another seller owns (nothing was changed). */
    put(
      sellerId: string,
      keys: SellerReceiptJwk[],
    ): Promise<{ keys: SellerReceiptJwk[]; updatedAt: Date } | { taken: string[] }>;
  };
  /** Throws NOT_FOUND when the seller does not exist. */
  assertSellerExists(sellerId: string): Promise<void>;
  /** The clock (tests). */
  now?: () => Date;
}

export interface ReceiptKeyProof {
  kid: string;
  /** Compact JWS signed by the key (see the contract's ReceiptKeyProof). */
  signature: string;
}

export const PROOF_PURPOSE = 'seller-receipt-key-proof';
export const PROOF_TYP = 'x402-receipt-key-proof+jws';
/** How far a proof's `iat` may be from the service's clock, seconds. */
export const PROOF_WINDOW_S = 300;

type Problem = { field: string; message: string };

/** The proof statement's payload as a JSON object (the field checks follow the signature). */
const isObject = (p: unknown): p is Record<string, unknown> => typeof p === 'object' && p !== null;

/**
 * Why `proof` does not prove that its signer holds `key` for `sellerId` (code and message), or null when it does.
 * The signature is checked by the one JWS check (receipts/jws.ts: compact, EdDSA, the header's typ, against the key
 * as a one-key JWK Set); the header's alg and kid must name this key, and the payload must be this seller's
 * statement about this key, signed within PROOF_WINDOW_S of now.
 */
export async function keyProofProblem(
  proof: ReceiptKeyProof,
  key: SellerReceiptJwk,
  sellerId: string,
  now: Date,
): Promise<{ code: 'INVALID_SIGNATURE' | 'AUTH_EXPIRED'; message: string } | null> {
  const bad = (message: string) => ({ code: 'INVALID_SIGNATURE' as const, message });
  const notJws = bad('is not a JWS with a JSON header and payload');
  const wrongHeader = bad(`needs the protected header {alg: "EdDSA", kid: "${key.kid}", typ: "${PROOF_TYP}"}`);
  let header: { alg?: unknown; kid?: unknown };
  try {
    header = decodeProtectedHeader(proof.signature);
  } catch {
    return notJws;
  }
  if (header.alg !== 'EdDSA' || header.kid !== key.kid) return wrongHeader;
  const jwk = { kty: 'OKP', crv: 'Ed25519', x: key.x, kid: key.kid, alg: 'EdDSA' };
  const checked = await verifyJws(proof.signature, { keys: [jwk] }, PROOF_TYP, isObject);
  if (!checked.valid) {
    if (checked.reason === 'wrong_type') return wrongHeader;
    if (checked.reason === 'bad_signature' || checked.reason === 'unknown_key')
      return bad(`is not a signature by the receipt key ${key.kid}`);
    return notJws;
  }
  const payload = checked.payload;
  if (
    payload.purpose !== PROOF_PURPOSE ||
    payload.sellerId !== sellerId ||
    payload.kid !== key.kid ||
    payload.x !== key.x
  ) {
    return bad(
      `must sign {purpose: "${PROOF_PURPOSE}", sellerId: "${sellerId}", kid, x} of this key (it signs another ` +
        `seller, key or purpose)`,
    );
  }
  if (typeof payload.nonce !== 'string' || !/^[A-Za-z0-9_-]{16,128}$/.test(payload.nonce))
    return bad('needs a fresh random nonce (16 to 128 base64url characters)');
  if (
    typeof payload.iat !== 'number' ||
    !Number.isFinite(payload.iat) ||
    Math.abs(now.getTime() / 1000 - payload.iat) > PROOF_WINDOW_S
  ) {
    return { code: 'AUTH_EXPIRED', message: `was not signed within ${PROOF_WINDOW_S} seconds of now; sign a new one` };
  }
  return null;
}

export function createSellerReceiptKeyService(deps: Deps) {
  return {
    async get(sellerId: string): Promise<SellerReceiptKeysView> {
      await deps.assertSellerExists(sellerId);
      const stored = await deps.repository.get(sellerId);
      return { sellerId, keys: stored?.keys ?? [], updatedAt: stored?.updatedAt ?? null };
    },

    /**
     * Replaces the set. The contract validated the shape; this checks what a schema cannot: 32-byte keys in canonical
     * base64url, unique kids, a proof of possession for each key new to the seller; the repository then refuses a
     * key another seller owns.
     */
    async put(
      principal: Principal,
      sellerId: string,
      keys: SellerReceiptJwk[],
      proofs: ReceiptKeyProof[] = [],
    ): Promise<SellerReceiptKeysView> {
      assertActsFor(principal, sellerId);
      await deps.assertSellerExists(sellerId);
      const problems: Problem[] = [];
      const seen = new Set<string>();
      keys.forEach((k, i) => {
        const bytes = Buffer.from(k.x, 'base64url');
        // One key, one spelling: a re-encoded x (other unused trailing bits) would otherwise dodge "one seller per
        // key".
        if (bytes.length !== 32 || bytes.toString('base64url') !== k.x)
          problems.push({
            field: `keys[${i}].x`,
            message: 'must be a 32-byte Ed25519 public key, canonical base64url without padding',
          });
        if (seen.has(k.kid))
          problems.push({ field: `keys[${i}].kid`, message: `kid ${k.kid} appears twice; each key needs its own kid` });
        seen.add(k.kid);
      });
      if (problems.length)
        throw new DomainError('INVALID_REQUEST', problems.map((p) => `${p.field} ${p.message}`).join('; '), problems);
      await assertPossession(
        sellerId,
        keys,
        proofs,
        (await deps.repository.get(sellerId))?.keys ?? [],
        deps.now?.() ?? new Date(),
      );
      const clean = keys.map((k) => ({
        kty: 'OKP' as const,
        crv: 'Ed25519' as const,
        x: k.x,
        kid: k.kid,
        alg: 'EdDSA' as const,
        use: 'sig' as const,
      }));
      const stored = await deps.repository.put(sellerId, clean);
      if ('taken' in stored) {
        throw new DomainError(
          'CONFLICT',
          `A receipt key belongs to one seller: ${stored.taken.join(', ')} is published by another seller`,
          stored.taken.map((kid) => ({ field: 'keys', message: `kid ${kid} belongs to another seller` })),
        );
      }
      return { sellerId, keys: stored.keys, updatedAt: stored.updatedAt };
    },
  };
}

/** Every key not already in the seller's set needs a proof that verifies; one proof per kid, none for unknown kids. */
async function assertPossession(
  sellerId: string,
  keys: SellerReceiptJwk[],
  proofs: ReceiptKeyProof[],
  current: SellerReceiptJwk[],
  now: Date,
): Promise<void> {
  const known = new Set(current.map((k) => k.x));
  const byKid = new Map<string, { proof: ReceiptKeyProof; index: number }>();
  const missing: Problem[] = [];
  proofs.forEach((proof, index) => {
    if (byKid.has(proof.kid))
      missing.push({ field: `proofs[${index}].kid`, message: `kid ${proof.kid} has two proofs` });
    else if (!keys.some((k) => k.kid === proof.kid))
      missing.push({ field: `proofs[${index}].kid`, message: `kid ${proof.kid} is not in keys` });
    byKid.set(proof.kid, { proof, index });
  });
  keys.forEach((k, i) => {
    if (!known.has(k.x) && !byKid.has(k.kid))
      missing.push({
        field: `keys[${i}]`,
        message:
          `key ${k.kid} is new to this seller: publishing it needs a proof of possession in proofs (a JWS signed ` +
          `by the key)`,
      });
  });
  if (missing.length)
    throw new DomainError('INVALID_REQUEST', missing.map((p) => `${p.field}: ${p.message}`).join('; '), missing);
  for (const k of keys) {
    const entry = byKid.get(k.kid);
    if (!entry) continue;
    const problem = await keyProofProblem(entry.proof, k, sellerId, now);
    if (problem)
      throw new DomainError(problem.code, `proofs[${entry.index}] ${problem.message}`, [
        { field: `proofs[${entry.index}].signature`, message: problem.message },
      ]);
  }
}

export type SellerReceiptKeyService = ReturnType<typeof createSellerReceiptKeyService>;
