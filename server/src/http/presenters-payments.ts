import type { components } from '../generated/openapi';
import type { AttemptRecord, ReceiptRecord, SettlementRecord } from '../domain/facilitator/types';
import type { SettleOutcome } from '../domain/facilitator/settle-payment';
import { formatAmount } from '../domain/amount';
import { presentPayment } from './presenters';

/**
 * Facilitator and payment shapes. Never includes the authorization XDR or the nonce; the payer appears only in
 * the payment attempt (operator / receiving seller) and in the verify answer (to the caller who sent it).
 */
type S = components['schemas'];

const iso = (d: Date): string => d.toISOString();
const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function presentVerify(a: AttemptRecord): S['VerifyResponse'] {
  return {
    ok: true,
    paymentAttemptId: a.id,
    paymentHash: a.paymentHash,
    network: a.network as S['Network'],
    status: 'verified',
    payer: a.payer,
    expiresAtLedger: a.expiresAtLedger,
  };
}

export function presentSettle(o: SettleOutcome): S['SettleResponse'] {
  return {
    ok: true,
    settlementId: o.settlement.id,
    receiptId: o.receipt.id,
    transactionHash: o.settlement.transactionHash,
    ledger: o.status === 'settled' ? o.settlement.ledger : null,
    network: o.settlement.network as S['Network'],
    status: o.status,
    evidence: o.settlement.evidence,
  };
}

export function presentSettlement(s: SettlementRecord): S['Settlement'] {
  return {
    id: s.id,
    paymentAttemptId: s.paymentAttemptId,
    transactionHash: s.transactionHash,
    ledger: s.ledger,
    network: s.network as S['Network'],
    amount: formatAmount(s.amount),
    assetCode: s.assetCode,
    assetIssuer: s.assetIssuer,
    status: s.status,
    evidence: s.evidence,
    settledAt: isoOrNull(s.settledAt),
    createdAt: iso(s.createdAt),
  };
}

export function presentReceipt(r: ReceiptRecord): S['Receipt'] {
  return {
    id: r.id,
    paymentAttemptId: r.paymentAttemptId,
    settlementId: r.settlementId,
    resourceId: r.resourceId,
    sellerId: r.sellerId,
    versionId: r.versionId,
    transactionHash: r.transactionHash,
    ledger: r.ledger,
    network: r.network as S['Network'],
    amount: formatAmount(r.amount),
    assetCode: r.assetCode,
    assetIssuer: r.assetIssuer,
    status: r.status,
    evidence: r.evidence,
    failureCode: r.failureCode as S['Receipt']['failureCode'],
    failureReason: r.failureReason,
    settledAt: isoOrNull(r.settledAt),
    createdAt: iso(r.createdAt),
  };
}

export function presentPaymentDetail(
  a: AttemptRecord,
  s: SettlementRecord | null,
  r: ReceiptRecord | null,
): S['PaymentDetail'] {
  return {
    ...presentPayment(a),
    settlementId: s?.id ?? null,
    receiptId: r?.id ?? null,
    transactionHash: s?.transactionHash ?? null,
    links: {
      self: `/v1/payments/${a.id}`,
      settlement: s ? `/v1/settlements/${s.transactionHash}` : null,
      receipt: r ? `/v1/receipts/${r.id}` : null,
    },
  };
}
