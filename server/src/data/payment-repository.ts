import { QueryTypes, UniqueConstraintError, type Sequelize, type Transaction } from 'sequelize';
import { PaymentAttemptModel, ReceiptModel, ResourceModel, ResourceVersionModel, SettlementModel } from './models';
import { toPaymentAttempt } from './payment-read-repository';
import { normalizeAmount } from '../domain/amount';
import type {
  AttemptRecord,
  EvidenceLabel,
  PaymentRepository,
  ReceiptRecord,
  ResourceTermsRef,
  SettlementRecord,
} from '../domain/facilitator/types';
import { newId } from '../domain/ids';

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

/** Matches a concrete URL against a resource URL that may hold `{param}` segments. */
function urlMatches(template: string, url: string): boolean {
  if (template === url) return true;
  const pattern = template
    .split(/(\{[^}]+\})/)
    .map((part) => (/^\{[^}]+\}$/.test(part) ? '[^/?#]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${pattern}(?:[?#].*)?$`).test(url);
}

export function createPaymentRepository(db: Sequelize): PaymentRepository & { resourceRef(id: string): Promise<ResourceTermsRef | null> } {
  async function update(sql: string, replacements: Record<string, unknown>, transaction?: Transaction): Promise<number> {
    const rows = await db.query(sql, { replacements, type: QueryTypes.SELECT, transaction });
    return rows.length;
  }

  async function resourceRef(id: string): Promise<ResourceTermsRef | null> {
    const r = (await ResourceModel.findOne({ where: { id, status: 'active' }, ...raw })) as Record<string, unknown> | null;
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

  const repo: PaymentRepository & { resourceRef: typeof resourceRef } = {
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
        { id, resourceId: resource.id, sellerId: resource.sellerId, versionId: resource.versionId },
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

    async insertPendingSettlement(s, r) {
      await db.transaction(async (transaction) => {
        await SettlementModel.create({ ...s, updatedAt: s.createdAt }, { transaction });
        await ReceiptModel.create({ ...r, updatedAt: r.createdAt }, { transaction });
      });
    },

    async finalizeSettled(settlementId, ledger, settledAt, evidence) {
      return db.transaction(async (transaction) => {
        const done = await update(
          `UPDATE settlements SET status = 'settled', ledger = :ledger, settled_at = :settledAt, evidence = :evidence, updated_at = now()
           WHERE id = :settlementId AND status = 'pending' RETURNING payment_attempt_id`,
          { settlementId, ledger, settledAt, evidence },
          transaction,
        );
        if (done === 0) return false;
        await db.query(
          `UPDATE payment_attempts SET status = 'settled' WHERE id = (SELECT payment_attempt_id FROM settlements WHERE id = :settlementId)
             AND status = 'settlement_pending'`,
          { replacements: { settlementId }, transaction },
        );
        await db.query(
          `UPDATE receipts SET status = 'settled', ledger = :ledger, settled_at = :settledAt, evidence = :evidence,
             failure_code = NULL, failure_reason = NULL, updated_at = now()
           WHERE settlement_id = :settlementId`,
          { replacements: { settlementId, ledger, settledAt, evidence }, transaction },
        );
        return true;
      });
    },

    async finalizeFailed(settlementId, code, reason) {
      return db.transaction(async (transaction) => {
        const done = await update(
          `UPDATE settlements SET status = 'failed', evidence = 'failed_settlement', updated_at = now()
           WHERE id = :settlementId AND status = 'pending' RETURNING payment_attempt_id`,
          { settlementId },
          transaction,
        );
        if (done === 0) return false;
        await db.query(
          `UPDATE payment_attempts SET status = 'settlement_failed', failure_code = :code, failure_reason = :reason
           WHERE id = (SELECT payment_attempt_id FROM settlements WHERE id = :settlementId) AND status = 'settlement_pending'`,
          { replacements: { settlementId, code, reason }, transaction },
        );
        await db.query(
          `UPDATE receipts SET status = 'failed', evidence = 'failed_settlement', failure_code = :code, failure_reason = :reason, updated_at = now()
           WHERE settlement_id = :settlementId`,
          { replacements: { settlementId, code, reason }, transaction },
        );
        return true;
      });
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
        `SELECT id FROM settlements WHERE status = 'pending' AND created_at <= now() - make_interval(secs => :secs)
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

    async findResourceByUrl(network, payTo, url) {
      const rows = (await ResourceModel.findAll({ where: { network, payTo, status: 'active' }, order: [['id', 'ASC']], limit: 500, ...raw })) as unknown as Array<Record<string, unknown>>;
      const hit = rows.find((r) => urlMatches(r.url as string, url));
      return hit ? resourceRef(hit.id as string) : null;
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
