import type { Migration } from './types';

/**
 * Issue #31 (settle capacity): the facilitator's daily fee cap is split over shard rows instead of one row per network
 * and day that every reservation, release and final answer locked (at 64 channels the settles queued on it).
 *
 * - `global_fee_shards`: per network, UTC day and shard (0..15, the payer's shard: md5 of the payer, see
 *   data/settlement-repository.ts `FEE_SHARD_OF`) the fees committed and spent, like the other fee-day rows, plus
 *   `quota_stroops`: how much of the cap this shard may hold without looking at the others, and `cap_stroops`: the cap
 *   the quotas were split from. A reservation locks only its payer's shard while it fits within that shard's quota;
 *   otherwise it locks every shard of the day in shard order, checks the exact total against the cap and splits the
 *   headroom left into new quotas (their sum is the cap, never more): the cap holds exactly.
 * - The `global` rows of `party_fee_days` (party `*`) move into shard 0 of their day, so a day's total survives the
 *   upgrade (a settlement in flight across it gives its commitment back to its payer's shard, clamped at zero).
 */
export const migration: Migration = {
  name: '0135-global-fee-shards',
  async up(q) {
    await q(`
      CREATE TABLE global_fee_shards (
        network text NOT NULL,
        day date NOT NULL,
        shard smallint NOT NULL CHECK (shard >= 0),
        committed_stroops bigint NOT NULL DEFAULT 0,
        spent_stroops bigint NOT NULL DEFAULT 0,
        settlements integer NOT NULL DEFAULT 0,
        quota_stroops bigint,
        cap_stroops bigint,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (network, day, shard)
      )`);
    await q(`
      INSERT INTO global_fee_shards (network, day, shard, committed_stroops, spent_stroops, settlements, quota_stroops)
      SELECT network, day, 0, committed_stroops, spent_stroops, settlements, 0 FROM party_fee_days
       WHERE scope = 'global'`);
    await q(`DELETE FROM party_fee_days WHERE scope = 'global'`);
  },
};
