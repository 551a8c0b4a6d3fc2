import type { Migration } from './types';

/**
 * Issue #29: every sponsored fee is charged to whoever asked for it and bounded by something that costs them.
 * - `party_fee_days`: the network fees committed and spent per UTC day and network for the parties other than the
 *   seller (whose figures stay in `seller_fee_days`): each payer (`scope = 'payer'`), each anonymous client address
 *   (`'client'`) and the whole facilitator (`'global'`, party `*`).
 * - `settlements.fee_payer` / `fee_client`: the parties a settlement's fee was committed against, so the final answer
 *   moves the same rows (and a failure the payer caused is charged to the payer, not the seller).
 * - One settlement in flight per payer and asset: a payer never has two submitted transfers at once, so a second one
 *   can never fail for lack of the first's funds (the unique index is the rule across processes; settle waits its
 *   turn).
 */
export const migration: Migration = {
  name: '0043-fees-per-party-and-payer-turns',
  async up(q) {
    await q(`
      CREATE TABLE party_fee_days (
        scope text NOT NULL CHECK (scope IN ('payer', 'client', 'global')),
        party text NOT NULL,
        network text NOT NULL,
        day date NOT NULL,
        committed_stroops bigint NOT NULL DEFAULT 0,
        spent_stroops bigint NOT NULL DEFAULT 0,
        settlements integer NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (scope, party, network, day)
      )`);
    await q(`ALTER TABLE settlements ADD COLUMN fee_payer text, ADD COLUMN fee_client text`);
    // Attempts left claimed by an older version would break the index: they end as the cleanup worker would end them.
    await q(`UPDATE payment_attempts p SET status = 'settlement_failed', failure_code = 'SETTLEMENT_FAILED',
      failure_reason = 'abandoned before the upgrade'
              WHERE status = 'settlement_pending' AND NOT EXISTS (SELECT 1 FROM settlements s WHERE
                s.payment_attempt_id = p.id)
                AND EXISTS (SELECT 1 FROM payment_attempts o WHERE o.status = 'settlement_pending'
                  AND o.id <> p.id AND o.network = p.network AND o.payer = p.payer AND o.asset_code = p.asset_code
                  AND o.asset_issuer = p.asset_issuer)`);
    await q(
      `CREATE UNIQUE INDEX payment_attempts_one_in_flight_per_payer ON payment_attempts (network, payer, ` +
        `asset_code, asset_issuer) WHERE status = 'settlement_pending'`,
    );
  },
};
