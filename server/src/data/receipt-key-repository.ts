import type { Sequelize } from 'sequelize';
import type { PublicJwk } from '../domain/receipts/receipt-signer';
import { pgQuery } from './pg-query';

/** The most keys the key set publishes from the database (newest first); a bound, far above real rotations. */
const MAX_PUBLISHED = 100;

/**
 * The public receipt keys of every process sharing the database (migration 0012). Only public JWKs are stored:
 * the private key never leaves its process.
 */
export function createReceiptKeyRepository(db: Sequelize) {
  return {
    /** Records (or refreshes) this process's current public key. */
    async publish(key: PublicJwk): Promise<void> {
      await pgQuery(
        db,
        `INSERT INTO receipt_signing_keys (kid, public_jwk) VALUES ($1, $2::jsonb)
           ON CONFLICT (kid) DO UPDATE SET last_seen_at = now()`,
        [key.kid, JSON.stringify({ kty: key.kty, crv: key.crv, x: key.x, kid: key.kid, alg: key.alg, use: key.use })],
      );
    },
    /** Every published public key, most recently seen first. */
    async list(): Promise<PublicJwk[]> {
      const { rows } = await pgQuery<{ public_jwk: PublicJwk }>(
        db,
        `SELECT public_jwk FROM receipt_signing_keys ORDER BY last_seen_at DESC, kid LIMIT ${MAX_PUBLISHED}`,
        [],
      );
      return rows.map((r) => r.public_jwk);
    },
  };
}
