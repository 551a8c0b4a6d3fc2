import type { Migration } from './types';

/**
 * The public halves of the receipt signing keys of every process that shares this database. Each process records
 * its current key at start (public JWK only: the private key never leaves the process), and
 * `/.well-known/jwks.json` publishes them all, so a receipt signed by any process verifies against the key set
 * fetched from any other, even when processes were given different keys. Rows are never deleted: a receipt signed
 * with a key stays verifiable after that key is rotated out.
 */
export const migration: Migration = {
  name: '0012-receipt-signing-keys',
  async up(q) {
    await q(`
      CREATE TABLE receipt_signing_keys (
        kid text PRIMARY KEY CHECK (length(kid) BETWEEN 1 AND 128),
        public_jwk jsonb NOT NULL,
        first_seen_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now()
      )`);
  },
};
