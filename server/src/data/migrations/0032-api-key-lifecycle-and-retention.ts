import type { Migration } from './types';

/**
 * API key lifecycle and data retention (issue #19).
 *
 * api_keys gets a name, a scope (`admin`: everything of the seller's; `payments`: verify, settle and reading the
 * seller's own payments), the first characters of the key (`prefix`, safe to show), an optional expiry and the
 * time it was last used. Every existing key becomes an admin key named "initial" (the sign-up key).
 * `api_key_changes` notifications (pg_notify, payload = key id) tell every server process to drop its cached copy of
 * a revoked key.
 *
 * Indexes for the retention worker, so each of its deletes walks only expired rows: idempotency_keys by age,
 * rate_limits by window end, failed payment attempts by age.
 */
export const migration: Migration = {
  name: '0032-api-key-lifecycle-and-retention',
  async up(q) {
    await q(`
      ALTER TABLE api_keys
        ADD COLUMN name text NOT NULL DEFAULT 'initial' CHECK (char_length(name) BETWEEN 1 AND 64),
        ADD COLUMN scope text NOT NULL DEFAULT 'admin' CHECK (scope IN ('admin', 'payments')),
        ADD COLUMN prefix text NOT NULL DEFAULT '',
        ADD COLUMN expires_at timestamptz,
        ADD COLUMN last_used_at timestamptz;
      CREATE INDEX api_keys_seller_idx ON api_keys (seller_id, created_at DESC, id DESC);
      CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
      CREATE INDEX rate_limits_expire_idx ON rate_limits (expire);
      CREATE INDEX payment_attempts_failed_idx ON payment_attempts (created_at) WHERE status = 'verification_failed';
    `);
  },
};
