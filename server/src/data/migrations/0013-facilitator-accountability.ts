import type { Migration } from './types';

/**
 * Issue #18 (the facilitator cannot be turned against sellers, buyers or itself):
 * - settlements carry their transaction's time bound (`valid_until`: after a ledger closed past it, a transaction the
 *   ledger never saw can never land, so it is failed and its channel freed), the seller accountable for the fees,
 *   the most the transaction could cost and what it did cost, its channel sequence number (evidence when the RPC
 *   forgot: a channel that never reached that sequence never applied it), and a reconciliation mark for a transaction
 * whose
 *   window the RPC's history no longer covers (never failed without evidence);
 * - `seller_fee_days`: network fees per seller, network and UTC day (committed while pending, spent once final),
 *   which the optional daily fee budget is checked against with a compare-and-set;
 * - one verification_failed row per authorization: a repeated failing verify of one signed payment adds nothing.
 */
export const migration: Migration = {
  name: '0013-facilitator-accountability',
  async up(q) {
    await q(`
      ALTER TABLE settlements
        ADD COLUMN valid_until timestamptz NULL,
        ADD COLUMN tx_sequence bigint NULL,
        ADD COLUMN seller_id text NULL,
        ADD COLUMN max_fee_stroops bigint NULL CHECK (max_fee_stroops IS NULL OR max_fee_stroops >= 0),
        ADD COLUMN fee_charged_stroops bigint NULL CHECK (fee_charged_stroops IS NULL OR fee_charged_stroops >= 0),
        ADD COLUMN needs_reconciliation boolean NOT NULL DEFAULT false`);
    await q(`
      CREATE TABLE seller_fee_days (
        seller_id text NOT NULL,
        network text NOT NULL,
        day date NOT NULL,
        committed_stroops bigint NOT NULL DEFAULT 0 CHECK (committed_stroops >= 0),
        spent_stroops bigint NOT NULL DEFAULT 0 CHECK (spent_stroops >= 0),
        settlements integer NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (seller_id, network, day)
      )`);
    await q(`
      DELETE FROM payment_attempts a USING payment_attempts b
       WHERE a.status = 'verification_failed' AND b.status = 'verification_failed'
         AND a.payment_hash = b.payment_hash AND a.id > b.id`);
    await q(
      `CREATE UNIQUE INDEX payment_attempts_failed_once ON payment_attempts (payment_hash) WHERE status = ` +
        `'verification_failed'`,
    );
  },
};
