import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { amountColumn } from './amount-column';
import {
  ATTEMPT_COLUMNS,
  RECEIPT_COLUMNS,
  SETTLEMENT_COLUMNS,
  toAttempt,
  toReceipt,
  toSettlement,
} from './payment-rows';
import type { AttemptRecord, ReceiptRecord, ReceiptRepository, SettlementRecord } from '../domain/facilitator/types';
import { newId } from '../domain/ids';

/**
 * Receipts. Query style: parameterised SQL through pgQuery (prepared statements): the settled receipt is an upsert
 * on the attempt's unique receipt (ON CONFLICT), and the finalizer's search is a join. The pending receipt is written
 * with its settlement (settlement-repository.ts), in the same statement.
 */
export function createReceiptRepository(db: Sequelize): ReceiptRepository {
  async function findOne(name: string, where: string, value: string): Promise<ReceiptRecord | null> {
    const { rows } = await pgQuery(
      db,
      `SELECT ${RECEIPT_COLUMNS} FROM receipts WHERE ${where} = $1 LIMIT 1`,
      [value],
      name,
    );
    return rows[0] ? toReceipt(rows[0]) : null;
  }

  return {
    findReceipt: (id) => findOne('receipt_find', 'id', id),

    findReceiptByAttempt: (attemptId) => findOne('receipt_by_attempt', 'payment_attempt_id', attemptId),

    async settledWithoutSettledReceipt(limit) {
      const { rows: pairs } = await pgQuery<{ attemptId: string; settlementId: string }>(
        db,
        `SELECT a.id AS "attemptId", s.id AS "settlementId" FROM payment_attempts a
           JOIN settlements s ON s.payment_attempt_id = a.id AND s.status = 'settled'
           LEFT JOIN receipts r ON r.payment_attempt_id = a.id
         WHERE a.status = 'settled' AND (r.id IS NULL OR r.status <> 'settled')
         ORDER BY a.id LIMIT $1::int`,
        [limit],
        'receipt_settled_without_receipt',
      );
      if (pairs.length === 0) return [];
      const [attempts, settlements] = await Promise.all([
        pgQuery(
          db,
          `SELECT ${ATTEMPT_COLUMNS} FROM payment_attempts WHERE id = ANY($1::text[])`,
          [pairs.map((p) => p.attemptId)],
          'receipt_finalizer_attempts',
        ),
        pgQuery(
          db,
          `SELECT ${SETTLEMENT_COLUMNS} FROM settlements WHERE id = ANY($1::text[])`,
          [pairs.map((p) => p.settlementId)],
          'receipt_finalizer_settlements',
        ),
      ]);
      const attemptById = new Map(attempts.rows.map((r) => [r.id as string, toAttempt(r)]));
      const settlementById = new Map(settlements.rows.map((r) => [r.id as string, toSettlement(r)]));
      const out: Array<{ attempt: AttemptRecord; settlement: SettlementRecord }> = [];
      for (const p of pairs) {
        const attempt = attemptById.get(p.attemptId);
        const settlement = settlementById.get(p.settlementId);
        if (attempt && settlement) out.push({ attempt, settlement });
      }
      return out;
    },

    async upsertSettledReceipt(attempt, s, versionId) {
      await pgQuery(
        db,
        `INSERT INTO receipts (id, payment_attempt_id, settlement_id, resource_id, version_id, seller_id,
          transaction_hash, ledger,
           network, amount, asset_code, asset_issuer, status, evidence, settled_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::integer, $9, $10::numeric, $11, $12, 'settled', $13, $14::timestamptz)
         ON CONFLICT (payment_attempt_id) DO UPDATE SET status = 'settled', settlement_id = EXCLUDED.settlement_id,
           transaction_hash = EXCLUDED.transaction_hash, ledger = EXCLUDED.ledger, evidence = EXCLUDED.evidence,
           settled_at = EXCLUDED.settled_at, failure_code = NULL, failure_reason = NULL, updated_at = now()`,
        [
          newId('receipt'),
          attempt.id,
          s.id,
          attempt.resourceId,
          versionId,
          attempt.sellerId,
          s.transactionHash,
          s.ledger,
          s.network,
          amountColumn(s.amount),
          s.assetCode,
          s.assetIssuer,
          s.evidence,
          s.settledAt,
        ],
        'receipt_upsert_settled',
      );
    },
  };
}
