import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import type { SellerReceiptJwk } from '../domain/sellers/seller-receipt-keys';

/** Each seller's published receipt keys (migration 0042): public JWKs only, one set per seller. */
export function createSellerReceiptKeyRepository(db: Sequelize) {
  return {
    async get(sellerId: string): Promise<{ keys: SellerReceiptJwk[]; updatedAt: Date } | null> {
      const { rows } = await pgQuery<{ public_jwks: SellerReceiptJwk[]; updated_at: Date }>(
        db,
        'SELECT public_jwks, updated_at FROM seller_receipt_keys WHERE seller_id = $1',
        [sellerId],
        'seller_receipt_keys_get',
      );
      return rows[0] ? { keys: rows[0].public_jwks, updatedAt: rows[0].updated_at } : null;
    },
    /** Replaces the seller's set (one statement: concurrent replacements end with one of them, whole). */
    async put(sellerId: string, keys: SellerReceiptJwk[]): Promise<{ keys: SellerReceiptJwk[]; updatedAt: Date }> {
      const { rows } = await pgQuery<{ public_jwks: SellerReceiptJwk[]; updated_at: Date }>(
        db,
        `INSERT INTO seller_receipt_keys (seller_id, public_jwks) VALUES ($1, $2::jsonb)
           ON CONFLICT (seller_id) DO UPDATE SET public_jwks = EXCLUDED.public_jwks, updated_at = now()
           RETURNING public_jwks, updated_at`,
        [sellerId, JSON.stringify(keys)],
        'seller_receipt_keys_put',
      );
      return { keys: rows[0].public_jwks, updatedAt: rows[0].updated_at };
    },
  };
}

export type SellerReceiptKeyRepository = ReturnType<typeof createSellerReceiptKeyRepository>;
