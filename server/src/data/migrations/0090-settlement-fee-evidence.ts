import type { Migration } from './types';

/**
 * Fees the pubnet way (issue #30): a settlement records what it bid for inclusion (a getFeeStats percentile, capped)
 * and the resource fee its settle-time simulation asked (capped), and the percentile it bid at. They are evidence:
 * the facilitator's attestation of a settled receipt carries them beside the fee the ledger charged. Rows written
 * before this migration have none (NULL): their attestations carry no fees.
 */
export const migration: Migration = {
  name: '0090-settlement-fee-evidence',
  async up(q) {
    await q(`
      ALTER TABLE settlements
        ADD COLUMN inclusion_fee_stroops bigint NULL CHECK (inclusion_fee_stroops IS NULL OR
          inclusion_fee_stroops >= 0),
        ADD COLUMN resource_fee_stroops bigint NULL CHECK (resource_fee_stroops IS NULL OR resource_fee_stroops >= 0),
        ADD COLUMN fee_percentile text NULL;
    `);
  },
};
