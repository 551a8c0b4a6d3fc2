import type { Migration } from './types';

/**
 * Security fixes (issue #9).
 *
 * Seller sign-up challenges (wallet proof, SEP-10 style): one row per challenge issued by
 * POST /v1/sellers/challenges. A sign-up consumes its challenge with a compare-and-set on `used_at` inside the
 * transaction that creates the seller, so a challenge proves one sign-up at most, across server processes.
 * Expired rows are deleted when new challenges are issued.
 *
 * `search_signal_sync` holds the time of the search-sync worker's last full pass over the ranking signals: the
 * pass rewrites only the documents whose signals changed, and a document is as fresh as the later of its own
 * `signals_refreshed_at` and that pass.
 */
export const migration: Migration = {
  name: '0006-security',
  async up(q) {
    await q(`
      CREATE TABLE seller_wallet_challenges (
        id text PRIMARY KEY,
        wallet_address text NOT NULL,
        message text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX seller_wallet_challenges_expires_idx ON seller_wallet_challenges (expires_at);
      CREATE TABLE search_signal_sync (
        id smallint PRIMARY KEY CHECK (id = 1),
        synced_at timestamptz NOT NULL
      );
    `);
  },
};
