import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { SETTLEMENT_COLUMNS, toSettlement } from './payment-rows';
import { amountColumn } from './amount-column';
import type { FeeScope, SettlementRepository } from '../domain/facilitator/types';

/**
 * Runs a fee transaction again when PostgreSQL picked it as a deadlock victim (40P01) or a serialization failure
 * (40001): its rows are locked in one order, so this is rare, and the transaction was rolled back whole.
 */
async function withDeadlockRetry<T>(work: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (i >= tries || (code !== '40P01' && code !== '40001')) throw err;
      await new Promise((r) => setTimeout(r, 5 * i + Math.random() * 10));
    }
  }
}

/**
 * The last CTE of both final-answer statements: the channel pinned to the settled transaction (CTE `s` returns its
 * hash) is free again, in the same statement that recorded the ledger's answer.
 */
const FREE_PINNED_CHANNEL = `freed AS (
           UPDATE channel_leases SET holder = NULL, leased_until = NULL, transaction_hash = NULL, updated_at = now()
            WHERE transaction_hash = (SELECT transaction_hash FROM s)
           RETURNING address
         )`;

/**
 * The facilitator's daily fee cap is held in FEE_SHARDS rows per network and day (`global_fee_shards`, migration 0135),
 * not one: every reservation, release and final answer locked the one row, and at 64 channels the settles queued on
 * it (issue #31). A settlement's global figures live in its payer's shard (md5 of the payer: the same in every process
 * and PostgreSQL version). Each shard holds a quota, a share of the cap; the quotas of a day never sum past the cap.
 */
const FEE_SHARDS = 16;
const FEE_SHARD_OF = (payer: string) =>
  `(('x' || substr(md5(${payer}), 1, 8))::bit(32)::bigint % ${FEE_SHARDS})::smallint`;

/**
 * The day's shard rows, once per network and day (ON CONFLICT DO NOTHING: concurrent first reservations agree). A
 * day without any row yet splits the cap ($2) evenly over the shards' quotas; a day that already has rows (a process
 * without a cap wrote one) gets the missing ones with quota 0, and its first reservation splits the headroom left.
 */
const ENSURE_FEE_SHARDS_SQL = `INSERT INTO global_fee_shards (network, day, shard, quota_stroops, cap_stroops)
  SELECT $1::text, (now() AT TIME ZONE 'UTC')::date, g::smallint,
    CASE WHEN f.fresh THEN $2::bigint / ${FEE_SHARDS} + CASE WHEN g < $2::bigint % ${FEE_SHARDS} THEN 1 ELSE 0 END
      ELSE 0 END,
    CASE WHEN f.fresh THEN $2::bigint END
    FROM generate_series(0, ${FEE_SHARDS - 1}) g, (SELECT NOT EXISTS (SELECT 1 FROM global_fee_shards
      WHERE network = $1::text AND day = (now() AT TIME ZONE 'UTC')::date) AS fresh) f
  ON CONFLICT (network, day, shard) DO NOTHING`;

/**
 * The fee reservation, all or nothing in one statement (issue #31: as a transaction of six round trips it held the
 * seller's row and the one global row across round trips, and every settle queued behind them). Rows are locked in
 * one order (seller, payer, client, then global shards in shard order), each budget is checked against the locked
 * figures, and the fee is committed against every row only when all admit it. A row created meanwhile by a concurrent
 * first settle of the day can still refuse in its upsert: then the statement aborts itself (FEE_RACE, all rolled back)
 * and runs again, now seeing that row.
 *
 * The global cap ($9; null: none), `verdict`:
 * - $10 false (the common case): only the payer's shard is locked; 'ok' when the fee fits within its quota (split from
 *   this same cap), 'missing' when the day has no such row yet (the caller creates the day's shards and runs again),
 *   'slow' when the shard has no room or its quota was split from another cap (the caller runs again with $10 true);
 * - $10 true: every shard of the day is locked (shard order), 'ok' when the exact total + fee stays within the cap,
 *   'over' when it would not (the `global` budget is exhausted); an admitted fee is committed on the payer's shard and
 *   the headroom left (cap - total - fee) is split again into every shard's quota: quotas sum to the cap, and a shard
 *   admits alone only within its quota, so the total never passes the cap, however many settles reserve at once.
 */
const RESERVE_FEES_SQL = `WITH day AS (SELECT (now() AT TIME ZONE 'UTC')::date AS d),
  want(scope, party, budget, ord) AS (
    SELECT * FROM (VALUES ('payer', $2::text, $7::bigint, 1), ('client', $3::text, $8::bigint, 2))
      AS v(scope, party, budget, ord)
     WHERE v.party IS NOT NULL
  ), seller_row AS MATERIALIZED (
    SELECT committed_stroops + spent_stroops AS used FROM seller_fee_days
     WHERE seller_id = $1::text AND network = $4::text AND day = (SELECT d FROM day) FOR UPDATE
  ), party_row AS MATERIALIZED (
    SELECT f.scope, f.committed_stroops + f.spent_stroops AS used FROM party_fee_days f
      JOIN want w ON w.scope = f.scope AND w.party = f.party
     WHERE f.network = $4::text AND f.day = (SELECT d FROM day) AND (SELECT count(*) FROM seller_row) >= 0
     ORDER BY w.ord FOR UPDATE OF f
  ), shard_row AS MATERIALIZED (
    SELECT g.shard, g.committed_stroops + g.spent_stroops AS used, g.quota_stroops AS quota, g.cap_stroops AS cap
      FROM global_fee_shards g
     WHERE g.network = $4::text AND g.day = (SELECT d FROM day)
       AND (g.shard = ${FEE_SHARD_OF('$2::text')} OR $10::boolean) AND (SELECT count(*) FROM party_row) >= 0
     ORDER BY g.shard FOR UPDATE
  ), glob AS (
    SELECT CASE
      WHEN $9::bigint IS NULL THEN 'ok'
      WHEN (SELECT count(*) FROM shard_row) < CASE WHEN $10::boolean THEN ${FEE_SHARDS} ELSE 1 END THEN 'missing'
      WHEN $10::boolean THEN CASE WHEN (SELECT sum(used) FROM shard_row) + $5::bigint <= $9::bigint THEN 'ok'
        ELSE 'over' END
      WHEN (SELECT cap = $9::bigint AND used + $5::bigint <= quota FROM shard_row) THEN 'ok'
      ELSE 'slow' END AS v
  ), over AS (
    SELECT scope FROM (
      SELECT 'seller' AS scope, 0 AS ord, $6::bigint AS budget, COALESCE((SELECT used FROM seller_row), 0) AS used,
             false AS refused
      UNION ALL
      SELECT w.scope, w.ord, w.budget, COALESCE(r.used, 0), false FROM want w LEFT JOIN party_row r USING (scope)
      UNION ALL
      SELECT 'global', 3, NULL, 0, (SELECT v FROM glob) = 'over'
    ) c WHERE c.refused OR (c.budget IS NOT NULL AND c.used + $5::bigint > c.budget) ORDER BY c.ord LIMIT 1
  ), go AS (
    SELECT NOT EXISTS (SELECT 1 FROM over) AND (SELECT v FROM glob) = 'ok' AS ok
  ), seller_up AS (
    INSERT INTO seller_fee_days AS f (seller_id, network, day, committed_stroops, settlements)
    SELECT $1::text, $4::text, (SELECT d FROM day), $5::bigint, 1 WHERE (SELECT ok FROM go)
  ON CONFLICT (seller_id, network, day) DO UPDATE
    SET committed_stroops = f.committed_stroops + EXCLUDED.committed_stroops, settlements =
      f.settlements + 1, updated_at = now()
    WHERE $6::bigint IS NULL OR f.committed_stroops + f.spent_stroops + EXCLUDED.committed_stroops <= $6::bigint
  RETURNING 1
  ), party_up AS (
    INSERT INTO party_fee_days AS f (scope, party, network, day, committed_stroops, settlements)
    SELECT w.scope, w.party, $4::text, (SELECT d FROM day), $5::bigint, 1 FROM want w
     WHERE (SELECT ok FROM go) AND (SELECT count(*) FROM seller_up) >= 0 ORDER BY w.ord
  ON CONFLICT (scope, party, network, day) DO UPDATE
    SET committed_stroops = f.committed_stroops + EXCLUDED.committed_stroops,
      settlements = f.settlements + 1, updated_at = now()
    WHERE f.committed_stroops + f.spent_stroops + EXCLUDED.committed_stroops <= COALESCE(CASE f.scope
      WHEN 'payer' THEN $7::bigint WHEN 'client' THEN $8::bigint END, 9223372036854775807)
  RETURNING 1
  ), target AS (
    SELECT s.shard, CASE WHEN s.shard = ${FEE_SHARD_OF('$2::text')} THEN $5::bigint ELSE 0 END AS add, s.used AS used,
           h.room / ${FEE_SHARDS} + CASE WHEN s.shard < h.room % ${FEE_SHARDS} THEN 1 ELSE 0 END AS share
      FROM shard_row s, (SELECT $9::bigint - sum(used)::bigint - $5::bigint AS room FROM shard_row) h WHERE $10::boolean
    UNION ALL
    SELECT ${FEE_SHARD_OF('$2::text')}, $5::bigint, NULL, NULL WHERE NOT $10::boolean
  ), shard_up AS (
    INSERT INTO global_fee_shards AS g (network, day, shard, committed_stroops, settlements, quota_stroops, cap_stroops)
    SELECT $4::text, (SELECT d FROM day), t.shard, t.add, (t.shard = ${FEE_SHARD_OF('$2::text')})::int,
           t.used + t.add + t.share,
           CASE WHEN $10::boolean THEN $9::bigint END
      FROM target t WHERE (SELECT ok FROM go) AND (SELECT count(*) FROM party_up) >= 0
  ON CONFLICT (network, day, shard) DO UPDATE
    SET committed_stroops = g.committed_stroops + EXCLUDED.committed_stroops,
      settlements = g.settlements + EXCLUDED.settlements,
      quota_stroops = CASE WHEN $10::boolean THEN EXCLUDED.quota_stroops ELSE g.quota_stroops END,
      cap_stroops = CASE WHEN $10::boolean THEN EXCLUDED.cap_stroops ELSE g.cap_stroops END, updated_at = now()
    WHERE $9::bigint IS NULL OR $10::boolean OR (g.cap_stroops = $9::bigint
      AND g.committed_stroops + g.spent_stroops + EXCLUDED.committed_stroops <= g.quota_stroops)
  RETURNING g.shard, g.committed_stroops + g.spent_stroops AS used
  )
  SELECT (SELECT scope FROM over) AS exhausted, (SELECT v FROM glob) AS verdict,
    ((SELECT u.used FROM shard_up u WHERE u.shard = ${FEE_SHARD_OF('$2::text')}) + (SELECT COALESCE(sum(
      o.committed_stroops + o.spent_stroops), 0)::bigint FROM global_fee_shards o WHERE o.network = $4::text
      AND o.day = (SELECT d FROM day) AND o.shard <> ${FEE_SHARD_OF('$2::text')}))::text AS "globalUsed",
    CASE WHEN NOT (SELECT ok FROM go) THEN NULL
      ELSE 'FEE_RACE' || (1 / CASE WHEN (SELECT count(*) FROM seller_up) + (SELECT count(*) FROM party_up) =
        (SELECT count(*) FROM want) + 1 AND EXISTS (SELECT 1 FROM shard_up u
          WHERE u.shard = ${FEE_SHARD_OF('$2::text')} AND u.used IS NOT NULL) THEN 1 ELSE 0 END)::text END AS race`;

/**
 * Settlements, with the sellers' fee accounting they commit and settle. Query style: parameterised SQL through
 * pgQuery (prepared statements): every write is a compare-and-set, most take row locks, and the writes of one
 * settlement's cycle (record, final answer) are each one statement that also updates its attempt, its receipt and its
 * channel lease, all or nothing.
 */
export function createSettlementRepository(db: Sequelize): SettlementRepository {
  async function findOne(name: string, where: string, value: string) {
    const { rows } = await pgQuery(
      db,
      `SELECT ${SETTLEMENT_COLUMNS} FROM settlements WHERE ${where} = $1 LIMIT 1`,
      [value],
      name,
    );
    return rows[0] ? toSettlement(rows[0]) : null;
  }

  return {
    async insertPendingSettlement(s, r, leaseToken) {
      // One statement (issue #14 item 3: it sits in every channel's cycle), with the guarantees the transaction of
      // five statements had, all or nothing:
      // - the channel's lease row is locked first, and only while this settle still holds it (`lease`);
      // - compare-and-set on the claim (`live`): touching updated_at also tells the cleanup worker the claim is alive
      //   (its update re-checks updated_at on the row it waited for, so it cannot fail a claim that reached this
      //   point); a claim that is no longer settlement_pending writes nothing and answers false;
      // - the channel is pinned to the transaction's hash (`pinned`) only with a live claim, and the settlement and its
      //   receipt are written only with both (one of each per attempt: unique payment_attempt_id);
      // - a lost lease writes nothing and throws (as before): the caller fails the claim, nothing is submitted.
      const pin = leaseToken && s.channelAccount ? leaseToken : null;
      const {
        rows: [out],
      } = await pgQuery<{ live: number; pinned: number; recorded: number; leased: boolean; claimOpen: boolean }>(
        db,
        `WITH lease AS MATERIALIZED (
           SELECT address FROM channel_leases
            WHERE $15::text IS NOT NULL AND network = $4::text AND address = $8::text AND holder = $15::text
            FOR UPDATE
         ), live AS (
           UPDATE payment_attempts SET updated_at = now()
            WHERE id = $1::text AND status = 'settlement_pending' AND ($15::text IS NULL OR EXISTS
              (SELECT 1 FROM lease))
           RETURNING id
         ), pinned AS (
           UPDATE channel_leases SET transaction_hash = $3::text, updated_at = now()
            WHERE $15::text IS NOT NULL AND network = $4::text AND address = $8::text AND holder =
              $15::text AND EXISTS (SELECT 1 FROM live)
           RETURNING address
         ), settlement AS (
           INSERT INTO settlements (id, payment_attempt_id, transaction_hash, ledger, network, amount,
             asset_code, asset_issuer, status, evidence,
             channel_account, settled_at, created_at, updated_at, valid_until, seller_id,
               max_fee_stroops, tx_sequence, fee_payer, fee_client,
             inclusion_fee_stroops, resource_fee_stroops, fee_percentile)
           SELECT $2::text, live.id, $3::text, $9::integer, $4::text, $5::numeric, $6::text, $7::text,
             $10::text, $11::text,
             $8::text, $12::timestamptz, $13::timestamptz, $13::timestamptz, $31::timestamptz,
               $32::text, $33::bigint, $34::bigint, $35::text, $36::text,
             $37::bigint, $38::bigint, $39::text
             FROM live WHERE $15::text IS NULL OR EXISTS (SELECT 1 FROM pinned)
           RETURNING id
         ), receipt AS (
           INSERT INTO receipts (id, payment_attempt_id, settlement_id, resource_id, version_id,
             seller_id, transaction_hash, ledger, network, amount,
             asset_code, asset_issuer, status, evidence, failure_code, failure_reason, settled_at,
               created_at, updated_at)
           SELECT $14::text, $1::text, settlement.id, $16::text, $17::text, $18::text, $19::text,
             $20::integer, $21::text, $22::numeric,
             $23::text, $24::text, $25::text, $26::text, $27::text, $28::text, $29::timestamptz,
               $30::timestamptz, $30::timestamptz
             FROM settlement
           RETURNING id
         )
         SELECT (SELECT count(*) FROM live)::int AS live, (SELECT count(*) FROM pinned)::int AS pinned,
           (SELECT count(*) FROM receipt)::int AS recorded, EXISTS (SELECT 1 FROM lease) AS leased,
           EXISTS (SELECT 1 FROM payment_attempts WHERE id = $1::text AND status =
             'settlement_pending') AS "claimOpen"`,
        [
          s.paymentAttemptId,
          s.id,
          s.transactionHash,
          s.network,
          amountColumn(s.amount),
          s.assetCode,
          s.assetIssuer,
          s.channelAccount,
          s.ledger,
          s.status,
          s.evidence,
          s.settledAt,
          s.createdAt,
          r.id,
          pin,
          r.resourceId,
          r.versionId,
          r.sellerId,
          r.transactionHash,
          r.ledger,
          r.network,
          amountColumn(r.amount),
          r.assetCode,
          r.assetIssuer,
          r.status,
          r.evidence,
          r.failureCode,
          r.failureReason,
          r.settledAt,
          r.createdAt,
          s.validUntil ?? null,
          s.sellerId ?? null,
          s.maxFee === null || s.maxFee === undefined ? null : s.maxFee.toString(),
          s.txSequence ?? null,
          s.feePayer ?? null,
          s.feeClient ?? null,
          s.inclusionFee == null ? null : s.inclusionFee.toString(),
          s.resourceFee == null ? null : s.resourceFee.toString(),
          s.feePercentile ?? null,
        ],
        'settle_insert_pending',
      );
      if (out.recorded === 1) return true;
      // Not recorded: the claim is gone (false), or this settle no longer holds its channel (nothing was written).
      if (pin && out.claimOpen && (!out.leased || out.live === 1))
        throw new Error('the channel lease was lost before submission');
      return false;
    },

    async finalizeSettled(settlementId, ledger, settledAt, evidence) {
      // One statement (it sits in every channel's cycle): compare-and-set pending -> settled on the settlement; only
      // then the attempt (settlement_pending -> settled), its receipt, and the channel pinned to the transaction's hash
      // is freed. A settlement that already has its final answer changes nothing (false).
      const { rows } = await pgQuery<{ done: number }>(
        db,
        `WITH s AS (
           UPDATE settlements SET status = 'settled', ledger = $2::integer, settled_at =
             $3::timestamptz, evidence = $4::text, updated_at = now()
            WHERE id = $1::text AND status = 'pending'
           RETURNING payment_attempt_id, transaction_hash
         ), attempt AS (
           UPDATE payment_attempts SET status = 'settled' WHERE id = (SELECT payment_attempt_id FROM s)
             AND status = 'settlement_pending'
           RETURNING id
         ), receipt AS (
           UPDATE receipts SET status = 'settled', ledger = $2::integer, settled_at = $3::timestamptz,
             evidence = $4::text,
             failure_code = NULL, failure_reason = NULL, updated_at = now()
            WHERE settlement_id = $1::text AND EXISTS (SELECT 1 FROM s)
           RETURNING id
         ), ${FREE_PINNED_CHANNEL}
         SELECT count(*)::int AS done FROM s`,
        [settlementId, ledger, settledAt, evidence],
        'settle_finalize_settled',
      );
      return rows[0].done === 1;
    },

    async finalizeFailed(settlementId, code, reason) {
      // One statement, as finalizeSettled: pending -> failed on the settlement, then the attempt, its receipt, the
      // channel.
      const { rows } = await pgQuery<{ done: number }>(
        db,
        `WITH s AS (
           UPDATE settlements SET status = 'failed', evidence = 'failed_settlement', updated_at = now()
            WHERE id = $1::text AND status = 'pending'
           RETURNING payment_attempt_id, transaction_hash
         ), attempt AS (
           UPDATE payment_attempts SET status = 'settlement_failed', failure_code = $2::text, failure_reason = $3::text
            WHERE id = (SELECT payment_attempt_id FROM s) AND status = 'settlement_pending'
           RETURNING id
         ), receipt AS (
           UPDATE receipts SET status = 'failed', evidence = 'failed_settlement', failure_code =
             $2::text, failure_reason = $3::text, updated_at = now()
            WHERE settlement_id = $1::text AND EXISTS (SELECT 1 FROM s)
           RETURNING id
         ), ${FREE_PINNED_CHANNEL}
         SELECT count(*)::int AS done FROM s`,
        [settlementId, code, reason],
        'settle_finalize_failed',
      );
      return rows[0].done === 1;
    },

    findSettlementByAttempt: (attemptId) => findOne('settlement_by_attempt', 'payment_attempt_id', attemptId),

    findSettlementByHash: (hash) => findOne('settlement_by_hash', 'transaction_hash', hash),

    findSettlement: (id) => findOne('settlement_find', 'id', id),

    async pendingSettlements(olderThanSeconds, limit) {
      const { rows } = await pgQuery(
        db,
        `SELECT ${SETTLEMENT_COLUMNS} FROM settlements
          WHERE status = 'pending' AND NOT needs_reconciliation AND created_at <= now() -
            make_interval(secs => $1::double precision)
          ORDER BY created_at LIMIT $2::int`,
        [olderThanSeconds, limit],
        'settlement_pending_older_than',
      );
      return rows.map(toSettlement);
    },

    async reserveFees(parties, network, fee, budgets) {
      // All or nothing, in ONE statement (RESERVE_FEES_SQL), run once in the common case: the payer's global shard
      // had room. A shard row missing (the first reservation of the day) is created with its quota first; a shard
      // without room for the fee runs the statement again over every shard (exact against the cap).
      const budget = (scope: FeeScope) => (budgets[scope] === null ? null : budgets[scope]!.toString());
      const run = (everyShard: boolean) =>
        withDeadlockRetry(() =>
          pgQuery<{ exhausted: FeeScope | null; verdict: string; globalUsed: string | null }>(
            db,
            RESERVE_FEES_SQL,
            [
              parties.sellerId,
              parties.payer,
              parties.client ?? null,
              network,
              fee.toString(),
              budget('seller'),
              budget('payer'),
              parties.client ? budget('client') : null,
              budget('global'),
              everyShard,
            ],
            everyShard ? 'facilitator_fee_reserve_every_shard' : 'facilitator_fee_reserve',
          ).catch((err: unknown) => {
            // The race (division by zero: fewer rows admitted than wanted): rolled back whole, run again.
            if ((err as { code?: string }).code === '22012')
              throw Object.assign(new Error('fee race'), { code: '40001' });
            throw err;
          }),
        );
      let everyShard = false;
      for (let turn = 1; ; turn++) {
        const out = (await run(everyShard)).rows[0];
        if (out.exhausted !== null || out.verdict === 'ok')
          return {
            exhausted: out.exhausted,
            globalUsed: out.exhausted === null && out.globalUsed !== null ? BigInt(out.globalUsed) : null,
          };
        if (turn >= 4) throw new Error(`fee reservation found no verdict (${out.verdict})`);
        if (out.verdict === 'missing')
          await pgQuery(db, ENSURE_FEE_SHARDS_SQL, [network, budget('global')], 'facilitator_fee_shards_ensure');
        else everyShard = true;
      }
    },

    async exhaustedFeeBudget(parties, network, budgets) {
      // Before a settle queues for a channel: a budget already spent answers at once (no channel, no simulation).
      const { rows } = await pgQuery<{ scope: FeeScope }>(
        db,
        `SELECT 'seller' AS scope FROM seller_fee_days
           WHERE $5::bigint IS NOT NULL AND seller_id = $1 AND network = $4 AND day = (now() AT TIME
             ZONE 'UTC')::date AND committed_stroops + spent_stroops >= $5::bigint
         UNION ALL
         SELECT f.scope FROM party_fee_days f
           JOIN (VALUES ('payer', $2::text, $6::bigint), ('client', $3::text, $7::bigint)) AS b(scope, party, budget)
             ON f.scope = b.scope AND f.party = b.party
          WHERE b.budget IS NOT NULL AND f.network = $4 AND f.day = (now() AT TIME ZONE 'UTC')::date AND
            f.committed_stroops + f.spent_stroops >= b.budget
         UNION ALL
         SELECT 'global' FROM global_fee_shards WHERE $8::bigint IS NOT NULL AND network = $4 AND day = (now() AT
             TIME ZONE 'UTC')::date
           HAVING sum(committed_stroops + spent_stroops) >= $8::bigint
         LIMIT 1`,
        [
          parties.sellerId,
          parties.payer,
          parties.client ?? '',
          network,
          ...(['seller', 'payer', 'client', 'global'] as const).map((k) =>
            budgets[k] === null || (k === 'client' && !parties.client) ? null : budgets[k]!.toString(),
          ),
        ],
        'facilitator_fee_budget_precheck',
      );
      return rows[0]?.scope ?? null;
    },

    async releaseFees(parties, network, fee) {
      // One statement, rows locked in the reservation's order (seller, payer, client, the payer's global shard): see
      // RESERVE_FEES_SQL.
      await withDeadlockRetry(() =>
        pgQuery(
          db,
          `WITH want(scope, party, ord) AS (
             SELECT * FROM (VALUES ('payer', $4::text, 1), ('client', $5::text, 2))
               AS v(scope, party, ord) WHERE v.party IS NOT NULL
           ), seller_up AS (
             UPDATE seller_fee_days SET committed_stroops = GREATEST(0, committed_stroops - $3::bigint),
               settlements = GREATEST(0, settlements - 1), updated_at = now()
              WHERE seller_id = $1 AND network = $2 AND day = (now() AT TIME ZONE 'UTC')::date
             RETURNING 1
           ), party_lock AS MATERIALIZED (
             SELECT f.scope, f.party FROM party_fee_days f JOIN want w ON w.scope = f.scope AND w.party = f.party
              WHERE f.network = $2 AND f.day = (now() AT TIME ZONE 'UTC')::date
                AND (SELECT count(*) FROM seller_up) >= 0
              ORDER BY w.ord FOR UPDATE OF f
           ), party_up AS (
             UPDATE party_fee_days f SET committed_stroops = GREATEST(0, f.committed_stroops - $3::bigint),
                 settlements = GREATEST(0, f.settlements - 1), updated_at = now()
               FROM party_lock l
              WHERE f.scope = l.scope AND f.party = l.party AND f.network = $2
                AND f.day = (now() AT TIME ZONE 'UTC')::date
             RETURNING 1
           )
           UPDATE global_fee_shards SET committed_stroops = GREATEST(0, committed_stroops - $3::bigint),
               settlements = GREATEST(0, settlements - 1), updated_at = now()
            WHERE network = $2 AND day = (now() AT TIME ZONE 'UTC')::date AND shard = ${FEE_SHARD_OF('$4::text')}
              AND (SELECT count(*) FROM party_up) >= 0`,
          [parties.sellerId, network, fee.toString(), parties.payer, parties.client ?? null],
          'facilitator_fee_release',
        ),
      );
    },

    async settleFee(settlementId, charged, chargeTo = 'seller') {
      // Only the first final answer moves the fee (fee_charged_stroops is set once). The committed maximum leaves
      // every row it was committed against; what the ledger charged is spent by the payer, its client address and the
      // facilitator's global figure (the payer's shard), and by the seller unless the payer caused the failure
      // (chargeTo 'payer'). One statement (see RESERVE_FEES_SQL), rows locked in the reservation's order (seller,
      // payer, client, the payer's global shard).
      await withDeadlockRetry(() =>
        pgQuery(
          db,
          `WITH s AS (
             UPDATE settlements SET fee_charged_stroops = $2::bigint WHERE id = $1::text AND fee_charged_stroops
               IS NULL AND seller_id IS NOT NULL
             RETURNING seller_id, network, fee_payer, fee_client, (created_at AT TIME ZONE 'UTC')::date AS day,
               COALESCE(max_fee_stroops, 0) AS committed
           ), seller_up AS (
             UPDATE seller_fee_days f SET committed_stroops = GREATEST(0, f.committed_stroops - s.committed),
               spent_stroops = f.spent_stroops + $3::bigint, updated_at = now()
               FROM s WHERE f.seller_id = s.seller_id AND f.network = s.network AND f.day = s.day
             RETURNING 1
           ), want(scope, party, ord) AS (
             SELECT v.scope, v.party, v.ord FROM s, LATERAL (VALUES ('payer', s.fee_payer, 1),
               ('client', s.fee_client, 2)) AS v(scope, party, ord)
              WHERE s.fee_payer IS NOT NULL AND v.party IS NOT NULL
           ), party_lock AS MATERIALIZED (
             SELECT f.scope, f.party FROM party_fee_days f JOIN want w ON w.scope = f.scope AND w.party = f.party
               JOIN s ON f.network = s.network AND f.day = s.day
              WHERE (SELECT count(*) FROM seller_up) >= 0
              ORDER BY w.ord FOR UPDATE OF f
           ), party_up AS (
             UPDATE party_fee_days f SET committed_stroops = GREATEST(0, f.committed_stroops - s.committed),
                 spent_stroops = f.spent_stroops + $2::bigint, updated_at = now()
               FROM party_lock l, s
              WHERE f.scope = l.scope AND f.party = l.party AND f.network = s.network AND f.day = s.day
             RETURNING 1
           )
           UPDATE global_fee_shards g SET committed_stroops = GREATEST(0, g.committed_stroops - s.committed),
               spent_stroops = g.spent_stroops + $2::bigint, updated_at = now()
             FROM s
            WHERE g.network = s.network AND g.day = s.day AND g.shard = ${FEE_SHARD_OF('s.fee_payer')}
              AND (SELECT count(*) FROM party_up) >= 0`,
          [settlementId, charged.toString(), chargeTo === 'payer' ? '0' : charged.toString()],
          'facilitator_fee_settle',
        ),
      );
    },

    async markReconciliation(settlementId) {
      const { rows } = await pgQuery<{ done: number }>(
        db,
        `WITH s AS (
           UPDATE settlements SET needs_reconciliation = true, updated_at = now() WHERE id = $1::text
             AND status = 'pending' AND NOT needs_reconciliation
           RETURNING transaction_hash
         ), ${FREE_PINNED_CHANNEL}
         SELECT count(*)::int AS done FROM s`,
        [settlementId],
        'facilitator_mark_reconciliation',
      );
      return rows[0].done === 1;
    },

    async sellerFees(day) {
      const { rows } = await pgQuery<{
        sellerId: string;
        network: string;
        committedStroops: string;
        spentStroops: string;
        settlements: number;
      }>(
        db,
        `SELECT seller_id AS "sellerId", network, committed_stroops::text AS "committedStroops",
          spent_stroops::text AS "spentStroops", settlements
           FROM seller_fee_days WHERE day = $1::date ORDER BY spent_stroops + committed_stroops DESC,
             seller_id LIMIT 1000`,
        [day],
        'operations_seller_fees',
      );
      const { rows: recon } = await pgQuery<{ n: number }>(
        db,
        `SELECT count(*)::int AS n FROM settlements WHERE needs_reconciliation`,
        [],
        'operations_reconciliation_count',
      );
      return { items: rows, needingReconciliation: recon[0].n };
    },
  };
}
