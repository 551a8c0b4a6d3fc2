import { QueryTypes, type Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import type { SellerReceiptJwk } from '../domain/sellers/seller-receipt-keys';

class KeysTaken extends Error {
  constructor(readonly kids: string[]) {
    super('receipt keys owned by another seller');
  }
}

/**
 * Each seller's published receipt keys (migration 0042): public JWKs only, one set per seller; and who owns each key
 * (migration 0060: one seller per key, the primary key on `public_key`).
 */
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
    /**
     * Replaces the seller's set and its key claims in one transaction. A key another seller owns is never claimed:
     * the answer is `{ taken }` (the kids concerned) and nothing changes. Concurrent claims of one key by two sellers
     * meet on the primary key: the second waits for the first and then sees it taken.
     */
    async put(
      sellerId: string,
      keys: SellerReceiptJwk[],
    ): Promise<{ keys: SellerReceiptJwk[]; updatedAt: Date } | { taken: string[] }> {
      const xs = keys.map((k) => k.x);
      const kids = keys.map((k) => k.kid);
      try {
        return await db.transaction(async (transaction) => {
          const run = <R extends object>(sql: string, bind: unknown[]) =>
            db.query<R>(sql, { bind, type: QueryTypes.SELECT, transaction });
          await run(
            'DELETE FROM seller_receipt_key_owners WHERE seller_id = $1 AND NOT (public_key = ANY($2::text[])) ' +
              'RETURNING public_key',
            [sellerId, xs],
          );
          await run(
            `INSERT INTO seller_receipt_key_owners (public_key, seller_id, kid)
               SELECT x, $1, kid FROM unnest($2::text[], $3::text[]) AS t(x, kid)
               ON CONFLICT (public_key) DO UPDATE SET kid = EXCLUDED.kid WHERE
                 seller_receipt_key_owners.seller_id = EXCLUDED.seller_id
               RETURNING public_key`,
            [sellerId, xs, kids],
          );
          const taken = await run<{ public_key: string }>(
            'SELECT public_key FROM seller_receipt_key_owners WHERE public_key = ANY($1::text[]) AND seller_id <> $2',
            [xs, sellerId],
          );
          if (taken.length) {
            const owned = new Set(taken.map((r) => r.public_key));
            throw new KeysTaken(keys.filter((k) => owned.has(k.x)).map((k) => k.kid)); // rolls the transaction back
          }
          const rows = await run<{ public_jwks: SellerReceiptJwk[]; updated_at: Date }>(
            `INSERT INTO seller_receipt_keys (seller_id, public_jwks) VALUES ($1, $2::jsonb)
               ON CONFLICT (seller_id) DO UPDATE SET public_jwks = EXCLUDED.public_jwks, updated_at = now()
               RETURNING public_jwks, updated_at`,
            [sellerId, JSON.stringify(keys)],
          );
          return { keys: rows[0].public_jwks, updatedAt: rows[0].updated_at };
        });
      } catch (err) {
        if (err instanceof KeysTaken) return { taken: err.kids };
        throw err;
      }
    },
  };
}

export type SellerReceiptKeyRepository = ReturnType<typeof createSellerReceiptKeyRepository>;
