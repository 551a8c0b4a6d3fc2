import type { Migration } from './types';

/**
 * The public keys with which each seller signs its own receipts (x402 offer-and-receipt), as the seller registered
 * them (PUT /v1/sellers/{sellerId}/receipt-keys): one JWK Set per seller, public halves only (a CHECK refuses any
 * private member `d`), at most 5 keys.
 */
export const migration: Migration = {
  name: '0042-seller-receipt-keys',
  async up(q) {
    await q(`
      CREATE TABLE seller_receipt_keys (
        seller_id text PRIMARY KEY REFERENCES sellers(id) ON DELETE CASCADE,
        public_jwks jsonb NOT NULL CHECK (jsonb_typeof(public_jwks) = 'array' AND
          jsonb_array_length(public_jwks) BETWEEN 1 AND 5 AND NOT jsonb_path_exists(public_jwks, '$[*].d')),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  },
};
