import type { Migration } from './types';

/**
 * Payment safety (issue #9, facilitator part) and one shared channel pool (issue #14 item 3).
 *
 * `resources.url_match_key`: for a resource URL whose path holds `{placeholders}`, its static prefix up to the last
 * `/` before the first placeholder (`https://api.example.com/v1/items/` for `.../v1/items/{id}`); NULL for a URL
 * without one. Verify-by-URL looks candidates up by exact URL or by this key (one index probe per path segment of
 * the requested URL), then matches the few candidates with a compiled matcher: no row scan, no hand-built regex.
 *
 * `channel_leases`: one row per facilitator channel account and network. A process takes a free row with
 * `FOR UPDATE SKIP LOCKED` and stamps it with its token and an expiry; once the settlement transaction is built
 * its hash is written on the lease in the same database transaction as the pending settlement, and from then on the
 * lease is never handed out again until the ledger's answer is recorded (finalizeSettled / finalizeFailed clear it),
 * whatever its expiry says. A lease without a transaction whose holder vanished is free again after its expiry.
 *
 * `payment_attempts_claimed_idx` lets the cleanup worker find attempts claimed for settlement but left without a
 * settlement row (a crash or an error between the claim and the pending settlement).
 */
export const migration: Migration = {
  name: '0005-payment-safety',
  async up(q) {
    await q(`
      ALTER TABLE resources ADD COLUMN url_match_key text GENERATED ALWAYS AS (
        CASE WHEN url ~ '^https?://[^/?#{}]+/[^?#]*[{]' THEN substring(url from '^[^{?#]*/') END
      ) STORED;
      CREATE INDEX resources_url_exact_idx ON resources (url) WHERE status = 'active';
      CREATE INDEX resources_url_match_key_idx ON resources (url_match_key) WHERE status = 'active' AND
        url_match_key IS NOT NULL;

      CREATE TABLE channel_leases (
        network text NOT NULL,
        address text NOT NULL,
        holder text,
        leased_until timestamptz,
        transaction_hash text,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (network, address)
      );
      CREATE INDEX channel_leases_hash_idx ON channel_leases (transaction_hash) WHERE transaction_hash IS NOT NULL;

      CREATE INDEX payment_attempts_claimed_idx ON payment_attempts (updated_at) WHERE status = 'settlement_pending';
    `);
  },
};
