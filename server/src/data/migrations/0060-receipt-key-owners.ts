import type { Migration } from './types';

/**
 * A receipt key belongs to one seller (issue #29, item 11): each published public key (its `x`, canonical
 * base64url) is claimed by exactly one seller, enforced by the primary key. The claims mirror the sellers' current
 * sets (seller_receipt_keys, 0042), written in the same transaction as the set.
 *
 * Existing sets are claimed first come, first served (by updated_at, then seller id): a key that another seller
 * already published before this rule existed is taken out of the later seller's set (that was the attack: its
 * receipts would have verified as the first seller's), and a set left empty is deleted.
 */
export const migration: Migration = {
  name: '0060-receipt-key-owners',
  async up(q) {
    await q(`
      CREATE TABLE seller_receipt_key_owners (
        public_key text PRIMARY KEY,
        seller_id text NOT NULL REFERENCES sellers(id) ON DELETE CASCADE,
        kid text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q(`CREATE INDEX seller_receipt_key_owners_seller ON seller_receipt_key_owners (seller_id)`);
    await q(`
      INSERT INTO seller_receipt_key_owners (public_key, seller_id, kid)
      SELECT DISTINCT ON (k->>'x') k->>'x', s.seller_id, k->>'kid'
        FROM seller_receipt_keys s, jsonb_array_elements(s.public_jwks) k
       ORDER BY k->>'x', s.updated_at, s.seller_id`);
    await q(`
      DELETE FROM seller_receipt_keys s
       WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(s.public_jwks) k
                          JOIN seller_receipt_key_owners o ON o.public_key = k->>'x' AND o.seller_id = s.seller_id)`);
    await q(`
      UPDATE seller_receipt_keys s
         SET public_jwks = (SELECT jsonb_agg(k) FROM jsonb_array_elements(s.public_jwks) k
                             WHERE EXISTS (SELECT 1 FROM seller_receipt_key_owners o
                               WHERE o.public_key = k->>'x' AND o.seller_id = s.seller_id))
       WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(s.public_jwks) k
                      WHERE NOT EXISTS (SELECT 1 FROM seller_receipt_key_owners o WHERE
                        o.public_key = k->>'x' AND o.seller_id = s.seller_id))`);
  },
};
