import type { Migration } from './types';

/**
 * Issue #30, x402 answers a caller may ask for again:
 * - `x402_payment_identifiers`: the payment-identifier extension's idempotency records. One row per (scope, id,
 *   operation): the answer given (status, body, headers), bound to the fingerprint of the terms (scheme, network,
 *   asset, amount, payTo, resource) and the hash of the payload it answered. `scope` is who asked (a seller's key or
 *   an anonymous client address) and the payer, so one party never reads another's answers. Rows expire (read side)
 *   and each scope keeps a bounded number (insert side). `json`, not `jsonb`: the stored answer is given back as it
 *   was first written, key order included.
 * - `x402_settle_answers_owed`: a settle the x402 face answered `settlement_pending` (spec v2, @x402/core >= 2.24)
 *   owes its caller one final answer: the stock server's one retry of the same payload takes it (deleted on take, so
 *   one retry, in any process, gets it; a later replay of the payload is a duplicate).
 */
export const migration: Migration = {
  name: '0080-x402-answers',
  async up(q) {
    await q(`
      CREATE TABLE x402_payment_identifiers (
        scope text NOT NULL,
        payment_id text NOT NULL CHECK (char_length(payment_id) BETWEEN 16 AND 128),
        operation text NOT NULL CHECK (operation IN ('verify', 'settle')),
        fingerprint text NOT NULL,
        payload_hash text NOT NULL,
        status integer NOT NULL,
        body json NOT NULL,
        headers json NOT NULL DEFAULT '{}'::json,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (scope, payment_id, operation)
      );
      CREATE INDEX x402_payment_identifiers_scope_age ON x402_payment_identifiers (scope, created_at);
      CREATE TABLE x402_settle_answers_owed (
        payment_attempt_id text PRIMARY KEY REFERENCES payment_attempts (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `);
  },
};
