/**
 * A seller's receipt keys: the public Ed25519 keys with which the seller signs its OWN receipts (x402
 * offer-and-receipt, the seller SDK's createReceiptSigner), registered by the seller and published for buyers. The
 * marketplace never holds the private halves and never signs with them; its own signatures (attestations) use the
 * service keys of /.well-known/jwks.json.
 */
import { DomainError } from '../errors';
import { assertActsFor, type Principal } from '../auth/principal';

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
    put(sellerId: string, keys: SellerReceiptJwk[]): Promise<{ keys: SellerReceiptJwk[]; updatedAt: Date }>;
  };
  /** Throws NOT_FOUND when the seller does not exist. */
  assertSellerExists(sellerId: string): Promise<void>;
}

export function createSellerReceiptKeyService(deps: Deps) {
  return {
    async get(sellerId: string): Promise<SellerReceiptKeysView> {
      await deps.assertSellerExists(sellerId);
      const stored = await deps.repository.get(sellerId);
      return { sellerId, keys: stored?.keys ?? [], updatedAt: stored?.updatedAt ?? null };
    },

    /** Replaces the set. The contract validated the shape; this checks what a schema cannot: 32-byte keys, unique kids. */
    async put(principal: Principal, sellerId: string, keys: SellerReceiptJwk[]): Promise<SellerReceiptKeysView> {
      assertActsFor(principal, sellerId);
      await deps.assertSellerExists(sellerId);
      const problems: Array<{ field: string; message: string }> = [];
      const seen = new Set<string>();
      keys.forEach((k, i) => {
        if (Buffer.from(k.x, 'base64url').length !== 32) problems.push({ field: `keys[${i}].x`, message: 'must be a 32-byte Ed25519 public key, base64url without padding' });
        if (seen.has(k.kid)) problems.push({ field: `keys[${i}].kid`, message: `kid ${k.kid} appears twice; each key needs its own kid` });
        seen.add(k.kid);
      });
      if (problems.length) throw new DomainError('INVALID_REQUEST', problems.map((p) => `${p.field} ${p.message}`).join('; '), problems);
      const clean = keys.map((k) => ({ kty: 'OKP' as const, crv: 'Ed25519' as const, x: k.x, kid: k.kid, alg: 'EdDSA' as const, use: 'sig' as const }));
      const stored = await deps.repository.put(sellerId, clean);
      return { sellerId, keys: stored.keys, updatedAt: stored.updatedAt };
    },
  };
}

export type SellerReceiptKeyService = ReturnType<typeof createSellerReceiptKeyService>;
