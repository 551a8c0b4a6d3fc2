import { toPaymentAttempt } from './payment-read-repository';
import { stroopsColumn } from './amount-column';
import type { AttemptRecord, EvidenceLabel, ReceiptRecord, SettlementRecord } from '../domain/facilitator/types';

/**
 * The columns and row readers of payment attempts, settlements and receipts, shared by the repositories that read
 * them (attempt-, settlement- and receipt-repository.ts). Columns are aliased to the camelCase names the readers take.
 */
export const ATTEMPT_COLUMNS = `id, resource_id AS "resourceId", version_id AS "versionId", seller_id AS "sellerId",
  payment_hash AS
  "paymentHash", network,
  payer, nonce, asset_code AS "assetCode", asset_issuer AS "assetIssuer", amount, pay_to AS "payTo", status,
    failure_code AS "failureCode",
  failure_reason AS "failureReason", expires_at_ledger AS "expiresAtLedger", created_at AS "createdAt",
    updated_at AS "updatedAt"`;

export const SETTLEMENT_COLUMNS = `id, payment_attempt_id AS "paymentAttemptId", transaction_hash AS
  "transactionHash", ledger, network, amount,
  asset_code AS "assetCode", asset_issuer AS "assetIssuer", status, evidence, channel_account AS
    "channelAccount", settled_at AS "settledAt",
  created_at AS "createdAt", valid_until AS "validUntil", tx_sequence AS "txSequence", seller_id AS "sellerId",
    max_fee_stroops AS "maxFeeStroops",
  needs_reconciliation AS "needsReconciliation", inclusion_fee_stroops AS "inclusionFeeStroops",
    resource_fee_stroops AS "resourceFeeStroops",
  fee_percentile AS "feePercentile", fee_charged_stroops AS "feeChargedStroops"`;

export const RECEIPT_COLUMNS = `id, payment_attempt_id AS "paymentAttemptId", settlement_id AS "settlementId",
  resource_id AS "resourceId",
  seller_id AS "sellerId", version_id AS "versionId", transaction_hash AS "transactionHash", ledger, network,
    amount, asset_code AS "assetCode",
  asset_issuer AS "assetIssuer", status, evidence, failure_code AS "failureCode", failure_reason AS
    "failureReason", settled_at AS "settledAt",
  created_at AS "createdAt"`;

export function toAttempt(row: Record<string, unknown>): AttemptRecord {
  return { ...toPaymentAttempt(row), nonce: row.nonce as string };
}

/** The fields a settlement and its receipt share: what moved on the ledger, and the evidence for it. */
function toLedgerFields(row: Record<string, unknown>) {
  return {
    paymentAttemptId: row.paymentAttemptId as string,
    transactionHash: row.transactionHash as string,
    ledger: (row.ledger as number | null) ?? null,
    network: row.network as string,
    amount: stroopsColumn(row.amount),
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    evidence: row.evidence as EvidenceLabel,
    settledAt: (row.settledAt as Date | null) ?? null,
    createdAt: row.createdAt as Date,
  };
}

export function toSettlement(row: Record<string, unknown>): SettlementRecord {
  return {
    id: row.id as string,
    ...toLedgerFields(row),
    status: row.status as SettlementRecord['status'],
    channelAccount: (row.channelAccount as string | null) ?? null,
    validUntil: (row.validUntil as Date | null) ?? null,
    txSequence: row.txSequence === null || row.txSequence === undefined ? null : String(row.txSequence),
    sellerId: (row.sellerId as string | null) ?? null,
    maxFee: row.maxFeeStroops === null || row.maxFeeStroops === undefined ? null : BigInt(row.maxFeeStroops as string),
    needsReconciliation: Boolean(row.needsReconciliation),
    inclusionFee: row.inclusionFeeStroops == null ? null : BigInt(row.inclusionFeeStroops as string),
    resourceFee: row.resourceFeeStroops == null ? null : BigInt(row.resourceFeeStroops as string),
    feePercentile: (row.feePercentile as string | null) ?? null,
    feeCharged: row.feeChargedStroops == null ? null : BigInt(row.feeChargedStroops as string),
  };
}

export function toReceipt(row: Record<string, unknown>): ReceiptRecord {
  return {
    id: row.id as string,
    ...toLedgerFields(row),
    settlementId: row.settlementId as string,
    resourceId: row.resourceId as string,
    sellerId: row.sellerId as string,
    versionId: row.versionId as string,
    status: row.status as ReceiptRecord['status'],
    failureCode: (row.failureCode as ReceiptRecord['failureCode']) ?? null,
    failureReason: (row.failureReason as string | null) ?? null,
  };
}
