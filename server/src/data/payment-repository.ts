import { QueryTypes, UniqueConstraintError, type Sequelize, type Transaction } from 'sequelize';
import { PaymentAttemptModel, ReceiptModel, ResourceModel, ResourceVersionModel, SettlementModel } from './models';
import { toPaymentAttempt } from './payment-read-repository';
import { pgQuery } from './pg-query';
import { normalizeAmount } from '../domain/amount';
import type {
  AttemptRecord,
  NewAttempt,
  EvidenceLabel,
  PaymentRepository,
  ReceiptRecord,
  ResourceTermsRef,
  SettlementRecord,
} from '../domain/facilitator/types';
import { newId } from '../domain/ids';
import { candidateMatchKeys, splitUrl, urlMatchKey, urlTemplateMatcher } from '../domain/catalog/route-template';

/** Longest URL verify-by-URL looks up; longer ones match nothing. */
const MAX_LOOKUP_URL_LENGTH = 2048;
/** At most this many candidate rows are matched per lookup (one seller rarely has more under one path prefix). */
const MAX_URL_CANDIDATES = 50;


/**
 * Writes of payment attempts, settlements and receipts. Every state change is a compare-and-set on the current
 * status (the database trigger forbids backward moves anyway); money-moving changes run in one transaction.
 */
function toAttempt(row: Record<string, unknown>): AttemptRecord {
  return { ...toPaymentAttempt(row), nonce: row.nonce as string };
}

function toSettlement(row: Record<string, unknown>): SettlementRecord {
  return {
    id: row.id as string,
    paymentAttemptId: row.paymentAttemptId as string,
    transactionHash: row.transactionHash as string,
    ledger: (row.ledger as number | null) ?? null,
    network: row.network as string,
    amount: normalizeAmount(String(row.amount)),
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    status: row.status as SettlementRecord['status'],
    evidence: row.evidence as EvidenceLabel,
    channelAccount: (row.channelAccount as string | null) ?? null,
    settledAt: (row.settledAt as Date | null) ?? null,
    createdAt: row.createdAt as Date,
    validUntil: (row.validUntil as Date | null) ?? null,
    txSequence: row.txSequence === null || row.txSequence === undefined ? null : String(row.txSequence),
    sellerId: (row.sellerId as string | null) ?? null,
    maxFee: row.maxFeeStroops === null || row.maxFeeStroops === undefined ? null : BigInt(row.maxFeeStroops as string),
    needsReconciliation: Boolean(row.needsReconciliation),
  };
}

function toReceipt(row: Record<string, unknown>): ReceiptRecord {
  return {
    id: row.id as string,
    paymentAttemptId: row.paymentAttemptId as string,
    settlementId: row.settlementId as string,
    resourceId: row.resourceId as string,
    sellerId: row.sellerId as string,
    versionId: row.versionId as string,
    transactionHash: row.transactionHash as string,
    ledger: (row.ledger as number | null) ?? null,
    network: row.network as string,
    amount: normalizeAmount(String(row.amount)),
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    status: row.status as ReceiptRecord['status'],
    evidence: row.evidence as EvidenceLabel,
    failureCode: (row.failureCode as ReceiptRecord['failureCode']) ?? null,
    failureReason: (row.failureReason as string | null) ?? null,
    settledAt: (row.settledAt as Date | null) ?? null,
    createdAt: row.createdAt as Date,
  };
}

const raw = { raw: true } as const;

/**
 * verify's write path in as few statements as the replay guarantee allows (issue #14): the attempt is claimed with
 * one `INSERT ... ON CONFLICT DO NOTHING RETURNING` (the unique replay index decides across processes, as before);
 * only a conflict reads the row it lost to. A verify whose ledger check then fails removes its row (a verified
 * attempt cannot become verification_failed) and records the failure as any failed verify does.
 */
export interface VerifiedAttemptWriter {
  /** Inserts a verified attempt; on a replay answers the id of the attempt holding the authorization (null if gone). */
  insertVerifiedAttempt(a: NewAttempt): Promise<{ attempt: AttemptRecord } | { replayOf: string | null }>;
  /** A verified attempt whose verify then failed its ledger check: removed (verify records the failure as a new row). */
  dropVerifiedAttempt(id: string): Promise<void>;
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

export function createPaymentRepository(db: Sequelize): PaymentRepository & VerifiedAttemptWriter & { resourceRef(id: string): Promise<ResourceTermsRef | null> } {
  async function update(sql: string, replacements: Record<string, unknown>, transaction?: Transaction): Promise<number> {
    const rows = await db.query(sql, { replacements, type: QueryTypes.SELECT, transaction });
    return rows.length;
  }

  async function resourceRef(id: string): Promise<ResourceTermsRef | null> {
    // on every verify with a resourceId: the terms only, as one prepared statement
    const {
      rows: [r],
    } = await pgQuery(
      db,
      `SELECT id, seller_id AS "sellerId", current_version_id AS "currentVersionId", network, pay_to AS "payTo", asset_code AS "assetCode",
         asset_issuer AS "assetIssuer", amount
       FROM resources WHERE id = $1 AND status = 'active'`,
      [id],
      'verify_resource_terms',
    );
    if (!r) return null;
    return {
      id: r.id as string,
      sellerId: r.sellerId as string,
      versionId: r.currentVersionId as string,
      network: r.network as string,
      payTo: r.payTo as string,
      assetCode: r.assetCode as string,
      assetIssuer: r.assetIssuer as string,
      amount: normalizeAmount(String(r.amount)),
    };
  }

  const repo: PaymentRepository & VerifiedAttemptWriter & { resourceRef: typeof resourceRef } = {
    async insertVerifiedAttempt(a) {
      const { rows } = await pgQuery(
        db,
        `INSERT INTO payment_attempts (id, resource_id, version_id, seller_id, payment_hash, network, payer, nonce, asset_code, asset_issuer,
           amount, pay_to, status, failure_code, failure_reason, expires_at_ledger, authorization_xdr)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
         ON CONFLICT DO NOTHING
         RETURNING id, resource_id AS "resourceId", version_id AS "versionId", seller_id AS "sellerId", payment_hash AS "paymentHash", network, payer, nonce,
         asset_code AS "assetCode", asset_issuer AS "assetIssuer", amount, pay_to AS "payTo", status, failure_code AS "failureCode",
         failure_reason AS "failureReason", expires_at_ledger AS "expiresAtLedger", created_at AS "createdAt", updated_at AS "updatedAt"`,
        [a.id, a.resourceId, a.versionId, a.sellerId, a.paymentHash, a.network, a.payer, a.nonce, a.assetCode, a.assetIssuer, a.amount, a.payTo,
          a.status, a.failureCode, a.failureReason, a.expiresAtLedger, a.authorizationXdr],
        'verify_insert_attempt',
      );
      if (rows[0]) return { attempt: toAttempt(rows[0]) };
      const held = await pgQuery<{ id: string }>(
        db,
        `SELECT id FROM payment_attempts WHERE network = $1 AND payer = $2 AND nonce = $3 AND status NOT IN ('verification_failed', 'created') LIMIT 1`,
        [a.network, a.payer, a.nonce],
        'verify_replay_holder',
      );
      return { replayOf: held.rows[0]?.id ?? null };
    },

    async dropVerifiedAttempt(id) {
      await pgQuery(db, `DELETE FROM payment_attempts WHERE id = $1 AND status = 'verified'`, [id], 'verify_drop_attempt');
    },

    resourceRef,

    async findAttempt(id) {
      const row = await PaymentAttemptModel.findByPk(id, raw);
      return row ? toAttempt(row as unknown as Record<string, unknown>) : null;
    },

    async findByReplayKey(network, payer, nonce) {
      const rows = await db.query(
        `SELECT id FROM payment_attempts WHERE network = :network AND payer = :payer AND nonce = :nonce
           AND status NOT IN ('verification_failed', 'created') LIMIT 1`,
        { replacements: { network, payer, nonce }, type: QueryTypes.SELECT },
      );
      const id = (rows[0] as { id: string } | undefined)?.id;
      return id ? repo.findAttempt(id) : null;
    },

    async findByHash(paymentHash) {
      const rows = await PaymentAttemptModel.findAll({ where: { paymentHash }, ...raw });
      return (rows as unknown as Record<string, unknown>[]).map(toAttempt);
    },

    async insertAttempt(a) {
      try {
        await PaymentAttemptModel.create({ ...a, createdAt: new Date(), updatedAt: new Date() });
        return 'inserted';
      } catch (err) {
        if (err instanceof UniqueConstraintError) return 'replay';
        throw err;
      }
    },

    async claimForSettlement(id, resource) {
      const n = await update(
        `UPDATE payment_attempts SET status = 'settlement_pending',
           resource_id = COALESCE(resource_id, :resourceId),
           seller_id = COALESCE(seller_id, :sellerId),
           version_id = COALESCE(version_id, :versionId)
         WHERE id = :id AND status = 'verified' RETURNING id`,
        { id, resourceId: resource?.id ?? null, sellerId: resource?.sellerId ?? null, versionId: resource?.versionId ?? null },
      );
      return n === 1;
    },

    async expireAttempt(id, reason) {
      await update(
        `UPDATE payment_attempts SET status = 'expired', failure_code = 'AUTH_EXPIRED', failure_reason = :reason
         WHERE id = :id AND status = 'verified' RETURNING id`,
        { id, reason },
      );
    },

    async failClaimedAttempt(id, code, reason) {
      await update(
        `UPDATE payment_attempts SET status = 'settlement_failed', failure_code = :code, failure_reason = :reason
         WHERE id = :id AND status = 'settlement_pending' RETURNING id`,
        { id, code, reason },
      );
    },

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
            WHERE id = $1::text AND status = 'settlement_pending' AND ($15::text IS NULL OR EXISTS (SELECT 1 FROM lease))
           RETURNING id
         ), pinned AS (
           UPDATE channel_leases SET transaction_hash = $3::text, updated_at = now()
            WHERE $15::text IS NOT NULL AND network = $4::text AND address = $8::text AND holder = $15::text AND EXISTS (SELECT 1 FROM live)
           RETURNING address
         ), settlement AS (
           INSERT INTO settlements (id, payment_attempt_id, transaction_hash, ledger, network, amount, asset_code, asset_issuer, status, evidence,
             channel_account, settled_at, created_at, updated_at, valid_until, seller_id, max_fee_stroops, tx_sequence)
           SELECT $2::text, live.id, $3::text, $9::integer, $4::text, $5::numeric, $6::text, $7::text, $10::text, $11::text,
             $8::text, $12::timestamptz, $13::timestamptz, $13::timestamptz, $31::timestamptz, $32::text, $33::bigint, $34::bigint
             FROM live WHERE $15::text IS NULL OR EXISTS (SELECT 1 FROM pinned)
           RETURNING id
         ), receipt AS (
           INSERT INTO receipts (id, payment_attempt_id, settlement_id, resource_id, version_id, seller_id, transaction_hash, ledger, network, amount,
             asset_code, asset_issuer, status, evidence, failure_code, failure_reason, settled_at, created_at, updated_at)
           SELECT $14::text, $1::text, settlement.id, $16::text, $17::text, $18::text, $19::text, $20::integer, $21::text, $22::numeric,
             $23::text, $24::text, $25::text, $26::text, $27::text, $28::text, $29::timestamptz, $30::timestamptz, $30::timestamptz
             FROM settlement
           RETURNING id
         )
         SELECT (SELECT count(*) FROM live)::int AS live, (SELECT count(*) FROM pinned)::int AS pinned,
           (SELECT count(*) FROM receipt)::int AS recorded, EXISTS (SELECT 1 FROM lease) AS leased,
           EXISTS (SELECT 1 FROM payment_attempts WHERE id = $1::text AND status = 'settlement_pending') AS "claimOpen"`,
        [
          s.paymentAttemptId, s.id, s.transactionHash, s.network, s.amount, s.assetCode, s.assetIssuer, s.channelAccount, s.ledger, s.status,
          s.evidence, s.settledAt, s.createdAt,
          r.id, pin, r.resourceId, r.versionId, r.sellerId, r.transactionHash, r.ledger, r.network, r.amount, r.assetCode, r.assetIssuer,
          r.status, r.evidence, r.failureCode, r.failureReason, r.settledAt, r.createdAt,
          s.validUntil ?? null, s.sellerId ?? null, s.maxFee === null || s.maxFee === undefined ? null : s.maxFee.toString(), s.txSequence ?? null,
        ],
        'settle_insert_pending',
      );
      if (out.recorded === 1) return true;
      // Not recorded: the claim is gone (false), or this settle no longer holds its channel (nothing was written).
      if (pin && out.claimOpen && (!out.leased || out.live === 1)) throw new Error('the channel lease was lost before submission');
      return false;
    },

    async failAbandonedClaims(olderThanSeconds, limit) {
      return update(
        `UPDATE payment_attempts SET status = 'settlement_failed', failure_code = 'SETTLEMENT_FAILED',
           failure_reason = 'the settlement was interrupted before any transaction was submitted'
         WHERE id IN (
           SELECT a.id FROM payment_attempts a
           WHERE a.status = 'settlement_pending' AND a.updated_at < now() - make_interval(secs => :secs)
             AND NOT EXISTS (SELECT 1 FROM settlements s WHERE s.payment_attempt_id = a.id)
           ORDER BY a.updated_at LIMIT :limit)
           AND status = 'settlement_pending' AND updated_at < now() - make_interval(secs => :secs)
         RETURNING id`,
        { secs: olderThanSeconds, limit },
      );
    },

    async versionTerms(versionId) {
      const rows = await db.query(
        `SELECT v.id, v.resource_id, r.seller_id, v.network, v.pay_to, v.asset_code, v.asset_issuer, v.amount
           FROM resource_versions v JOIN resources r ON r.id = v.resource_id WHERE v.id = :versionId`,
        { replacements: { versionId }, type: QueryTypes.SELECT },
      );
      const v = rows[0] as Record<string, unknown> | undefined;
      if (!v) return null;
      return {
        id: v.resource_id as string,
        sellerId: v.seller_id as string,
        versionId: v.id as string,
        network: v.network as string,
        payTo: v.pay_to as string,
        assetCode: v.asset_code as string,
        assetIssuer: v.asset_issuer as string,
        amount: normalizeAmount(String(v.amount)),
      };
    },

    async versionAt(resourceId, at) {
      const rows = await db.query(
        `SELECT id FROM resource_versions WHERE resource_id = :resourceId AND created_at <= :at ORDER BY version DESC LIMIT 1`,
        { replacements: { resourceId, at }, type: QueryTypes.SELECT },
      );
      return (rows[0] as { id: string } | undefined)?.id ?? null;
    },

    async finalizeSettled(settlementId, ledger, settledAt, evidence) {
      // One statement (it sits in every channel's cycle): compare-and-set pending -> settled on the settlement; only
      // then the attempt (settlement_pending -> settled), its receipt, and the channel pinned to the transaction's hash
      // is freed. A settlement that already has its final answer changes nothing (false).
      const { rows } = await pgQuery<{ done: number }>(
        db,
        `WITH s AS (
           UPDATE settlements SET status = 'settled', ledger = $2::integer, settled_at = $3::timestamptz, evidence = $4::text, updated_at = now()
            WHERE id = $1::text AND status = 'pending'
           RETURNING payment_attempt_id, transaction_hash
         ), attempt AS (
           UPDATE payment_attempts SET status = 'settled' WHERE id = (SELECT payment_attempt_id FROM s) AND status = 'settlement_pending'
           RETURNING id
         ), receipt AS (
           UPDATE receipts SET status = 'settled', ledger = $2::integer, settled_at = $3::timestamptz, evidence = $4::text,
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
      // One statement, as finalizeSettled: pending -> failed on the settlement, then the attempt, its receipt, the channel.
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
           UPDATE receipts SET status = 'failed', evidence = 'failed_settlement', failure_code = $2::text, failure_reason = $3::text, updated_at = now()
            WHERE settlement_id = $1::text AND EXISTS (SELECT 1 FROM s)
           RETURNING id
         ), ${FREE_PINNED_CHANNEL}
         SELECT count(*)::int AS done FROM s`,
        [settlementId, code, reason],
        'settle_finalize_failed',
      );
      return rows[0].done === 1;
    },

    async findSettlementByAttempt(attemptId) {
      const row = await SettlementModel.findOne({ where: { paymentAttemptId: attemptId }, ...raw });
      return row ? toSettlement(row as unknown as Record<string, unknown>) : null;
    },

    async findSettlementByHash(hash) {
      const row = await SettlementModel.findOne({ where: { transactionHash: hash }, ...raw });
      return row ? toSettlement(row as unknown as Record<string, unknown>) : null;
    },

    async findSettlement(id) {
      const row = await SettlementModel.findByPk(id, raw);
      return row ? toSettlement(row as unknown as Record<string, unknown>) : null;
    },

    async findReceipt(id) {
      const row = await ReceiptModel.findByPk(id, raw);
      return row ? toReceipt(row as unknown as Record<string, unknown>) : null;
    },

    async findReceiptByAttempt(attemptId) {
      const row = await ReceiptModel.findOne({ where: { paymentAttemptId: attemptId }, ...raw });
      return row ? toReceipt(row as unknown as Record<string, unknown>) : null;
    },

    async pendingSettlements(olderThanSeconds, limit) {
      const rows = await db.query(
        `SELECT id FROM settlements WHERE status = 'pending' AND NOT needs_reconciliation AND created_at <= now() - make_interval(secs => :secs)
         ORDER BY created_at LIMIT :limit`,
        { replacements: { secs: olderThanSeconds, limit }, type: QueryTypes.SELECT },
      );
      const out: SettlementRecord[] = [];
      for (const r of rows as Array<{ id: string }>) {
        const s = await repo.findSettlement(r.id);
        if (s) out.push(s);
      }
      return out;
    },

    async settledWithoutSettledReceipt(limit) {
      const rows = await db.query(
        `SELECT a.id AS attempt_id, s.id AS settlement_id FROM payment_attempts a
           JOIN settlements s ON s.payment_attempt_id = a.id AND s.status = 'settled'
           LEFT JOIN receipts r ON r.payment_attempt_id = a.id
         WHERE a.status = 'settled' AND (r.id IS NULL OR r.status <> 'settled')
         ORDER BY a.id LIMIT :limit`,
        { replacements: { limit }, type: QueryTypes.SELECT },
      );
      const out: Array<{ attempt: AttemptRecord; settlement: SettlementRecord }> = [];
      for (const r of rows as Array<{ attempt_id: string; settlement_id: string }>) {
        const attempt = await repo.findAttempt(r.attempt_id);
        const settlement = await repo.findSettlement(r.settlement_id);
        if (attempt && settlement) out.push({ attempt, settlement });
      }
      return out;
    },

    async upsertSettledReceipt(attempt, s, versionId) {
      await db.query(
        `INSERT INTO receipts (id, payment_attempt_id, settlement_id, resource_id, version_id, seller_id, transaction_hash, ledger,
           network, amount, asset_code, asset_issuer, status, evidence, settled_at)
         VALUES (:id, :attemptId, :settlementId, :resourceId, :versionId, :sellerId, :hash, :ledger, :network, :amount, :assetCode,
           :assetIssuer, 'settled', :evidence, :settledAt)
         ON CONFLICT (payment_attempt_id) DO UPDATE SET status = 'settled', settlement_id = EXCLUDED.settlement_id,
           transaction_hash = EXCLUDED.transaction_hash, ledger = EXCLUDED.ledger, evidence = EXCLUDED.evidence,
           settled_at = EXCLUDED.settled_at, failure_code = NULL, failure_reason = NULL, updated_at = now()`,
        {
          replacements: {
            id: newId('receipt'),
            attemptId: attempt.id,
            settlementId: s.id,
            resourceId: attempt.resourceId,
            versionId,
            sellerId: attempt.sellerId,
            hash: s.transactionHash,
            ledger: s.ledger,
            network: s.network,
            amount: s.amount,
            assetCode: s.assetCode,
            assetIssuer: s.assetIssuer,
            evidence: s.evidence,
            settledAt: s.settledAt,
          },
        },
      );
    },

    async expireStale(network, latestLedger) {
      return update(
        `UPDATE payment_attempts SET status = 'expired', failure_code = 'AUTH_EXPIRED',
           failure_reason = 'the authorization expired before settlement'
         WHERE status = 'verified' AND network = :network AND expires_at_ledger < :latest RETURNING id`,
        { network, latest: latestLedger },
      );
    },

    async sellerIdByWallet(address) {
      const { rows } = await pgQuery<{ id: string }>(db, `SELECT id FROM sellers WHERE wallet_address = $1`, [address], 'facilitator_seller_by_wallet');
      return rows[0]?.id ?? null;
    },

    async reserveFee(sellerId, network, fee, budget) {
      const { rows } = await pgQuery<{ ok: number }>(
        db,
        `INSERT INTO seller_fee_days AS f (seller_id, network, day, committed_stroops, settlements)
           SELECT $1::text, $2::text, (now() AT TIME ZONE 'UTC')::date, $3::bigint, 1 WHERE $4::bigint IS NULL OR $3::bigint <= $4::bigint
         ON CONFLICT (seller_id, network, day) DO UPDATE
           SET committed_stroops = f.committed_stroops + EXCLUDED.committed_stroops, settlements = f.settlements + 1, updated_at = now()
           WHERE $4::bigint IS NULL OR f.committed_stroops + f.spent_stroops + EXCLUDED.committed_stroops <= $4::bigint
         RETURNING 1 AS ok`,
        [sellerId, network, fee.toString(), budget === null ? null : budget.toString()],
        'facilitator_reserve_fee',
      );
      return rows.length === 1;
    },

    async releaseFee(sellerId, network, fee) {
      await pgQuery(
        db,
        `UPDATE seller_fee_days SET committed_stroops = GREATEST(0, committed_stroops - $3::bigint), settlements = GREATEST(0, settlements - 1), updated_at = now()
          WHERE seller_id = $1 AND network = $2 AND day = (now() AT TIME ZONE 'UTC')::date`,
        [sellerId, network, fee.toString()],
        'facilitator_release_fee',
      );
    },

    async settleFee(settlementId, charged) {
      // Only the first final answer moves the fee (fee_charged_stroops is set once).
      await pgQuery(
        db,
        `WITH s AS (
           UPDATE settlements SET fee_charged_stroops = $2::bigint WHERE id = $1::text AND fee_charged_stroops IS NULL AND seller_id IS NOT NULL
           RETURNING seller_id, network, (created_at AT TIME ZONE 'UTC')::date AS day, COALESCE(max_fee_stroops, 0) AS committed
         )
         UPDATE seller_fee_days f SET committed_stroops = GREATEST(0, f.committed_stroops - s.committed), spent_stroops = f.spent_stroops + $2::bigint, updated_at = now()
           FROM s WHERE f.seller_id = s.seller_id AND f.network = s.network AND f.day = s.day`,
        [settlementId, charged.toString()],
        'facilitator_settle_fee',
      );
    },

    async markReconciliation(settlementId) {
      const { rows } = await pgQuery<{ done: number }>(
        db,
        `WITH s AS (
           UPDATE settlements SET needs_reconciliation = true, updated_at = now() WHERE id = $1::text AND status = 'pending' AND NOT needs_reconciliation
           RETURNING transaction_hash
         ), ${FREE_PINNED_CHANNEL}
         SELECT count(*)::int AS done FROM s`,
        [settlementId],
        'facilitator_mark_reconciliation',
      );
      return rows[0].done === 1;
    },

    async sellerFees(day) {
      const { rows } = await pgQuery<{ sellerId: string; network: string; committedStroops: string; spentStroops: string; settlements: number }>(
        db,
        `SELECT seller_id AS "sellerId", network, committed_stroops::text AS "committedStroops", spent_stroops::text AS "spentStroops", settlements
           FROM seller_fee_days WHERE day = $1::date ORDER BY spent_stroops + committed_stroops DESC, seller_id LIMIT 1000`,
        [day],
        'operations_seller_fees',
      );
      const { rows: recon } = await pgQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM settlements WHERE needs_reconciliation`, [], 'operations_reconciliation_count');
      return { items: rows, needingReconciliation: recon[0].n };
    },

    async findResourceByUrl(network, payTo, url) {
      // Indexed lookup (migration 0005): the exact URL, or resource URLs whose static prefix is one of the
      // requested URL's path prefixes; then a cached path-to-regexp matcher on those few candidates.
      if (url.length > MAX_LOOKUP_URL_LENGTH || !splitUrl(url)) return null;
      const base = url.split(/[?#]/)[0];
      const keys = candidateMatchKeys(base);
      const rows = (await db.query(
        `SELECT id, url, seller_id FROM resources
          WHERE status = 'active' AND network = :network AND pay_to = :payTo
            AND (url IN (:exact) ${keys.length ? 'OR url_match_key IN (:keys)' : ''})
          ORDER BY id LIMIT :limit`,
        { replacements: { network, payTo, exact: [...new Set([url, base])], keys, limit: MAX_URL_CANDIDATES }, type: QueryTypes.SELECT },
      )) as Array<{ id: string; url: string; seller_id: string }>;
      const exact = rows.filter((r) => r.url === url || r.url === base);
      const hits = exact.length ? exact : rows.filter((r) => urlTemplateMatcher(r.url).call(null, url));
      if (hits.length === 0) return null;
      // Never attribute a payment to one of several sellers: ambiguity links nothing.
      if (new Set(hits.map((h) => h.seller_id)).size > 1) return null;
      // One seller: the most specific resource URL (longest static prefix) wins.
      const best = hits.reduce((a, b) => ((urlMatchKey(b.url) ?? b.url).length > (urlMatchKey(a.url) ?? a.url).length ? b : a));
      return resourceRef(best.id);
    },
  };
  return repo;
}

export type PaymentWriteRepository = ReturnType<typeof createPaymentRepository>;

/** The version of a resource active now (its versionId column), for receipts. */
export async function currentVersionId(resourceId: string): Promise<string | null> {
  const r = (await ResourceModel.findByPk(resourceId, raw)) as Record<string, unknown> | null;
  if (r?.currentVersionId) return r.currentVersionId as string;
  const v = (await ResourceVersionModel.findOne({ where: { resourceId }, order: [['version', 'DESC']], ...raw })) as Record<string, unknown> | null;
  return (v?.id as string | undefined) ?? null;
}

/**
 * The shared channel pool's lease table (migration 0005). A free row is one with no holder (or an expired holder)
 * and no pinned transaction; it is taken with FOR UPDATE SKIP LOCKED, so processes never wait on one another and
 * never take the same row.
 */
export function createChannelLeaseRepository(db: Sequelize) {
  return {
    async register(network: string, addresses: string[]): Promise<void> {
      if (addresses.length === 0) return;
      const values = addresses.map((_, i) => `(:network, :a${i})`).join(', ');
      const replacements: Record<string, string> = { network };
      addresses.forEach((a, i) => (replacements[`a${i}`] = a));
      await db.query(`INSERT INTO channel_leases (network, address) VALUES ${values} ON CONFLICT DO NOTHING`, { replacements });
    },

    /** Takes a free channel among `addresses` for `ttlSeconds`; null when all are busy. */
    async take(network: string, addresses: string[], token: string, ttlSeconds: number): Promise<string | null> {
      const rows = await db.query(
        `UPDATE channel_leases SET holder = :token, leased_until = now() + make_interval(secs => :ttl), updated_at = now()
         WHERE (network, address) = (
           SELECT network, address FROM channel_leases
            WHERE network = :network AND address IN (:addresses) AND transaction_hash IS NULL
              AND (holder IS NULL OR leased_until < now())
            ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING address`,
        { replacements: { network, addresses, token, ttl: ttlSeconds }, type: QueryTypes.SELECT },
      );
      return (rows[0] as { address: string } | undefined)?.address ?? null;
    },

    async renew(network: string, address: string, token: string, ttlSeconds: number): Promise<void> {
      await db.query(
        `UPDATE channel_leases SET leased_until = now() + make_interval(secs => :ttl) WHERE network = :network AND address = :address AND holder = :token`,
        { replacements: { network, address, token, ttl: ttlSeconds } },
      );
    },

    /** Frees the lease unless a transaction is pinned to it (finalizeSettled/finalizeFailed free those). */
    async release(network: string, address: string, token: string): Promise<void> {
      await db.query(
        `UPDATE channel_leases SET holder = NULL, leased_until = NULL, updated_at = now()
         WHERE network = :network AND address = :address AND holder = :token AND transaction_hash IS NULL`,
        { replacements: { network, address, token } },
      );
    },

    /** Busy channels of the network (held or pinned), for the metric. */
    async busy(network: string): Promise<number> {
      const rows = await db.query(
        `SELECT count(*)::int AS n FROM channel_leases WHERE network = :network
           AND (transaction_hash IS NOT NULL OR (holder IS NOT NULL AND leased_until >= now()))`,
        { replacements: { network }, type: QueryTypes.SELECT },
      );
      return (rows[0] as { n: number }).n;
    },
  };
}

export type ChannelLeaseRepository = ReturnType<typeof createChannelLeaseRepository>;
