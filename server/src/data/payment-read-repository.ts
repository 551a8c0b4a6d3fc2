import { Op, type WhereOptions } from 'sequelize';
import { PaymentAttemptModel } from './models';
import type { PaymentAttempt, PaymentReadRepository } from '../domain/payments/types';
import { stroopsColumn } from './amount-column';
import { toPage } from '../domain/pagination';

export function toPaymentAttempt(row: Record<string, unknown>): PaymentAttempt {
  return {
    id: row.id as string,
    resourceId: (row.resourceId as string | null) ?? null,
    versionId: (row.versionId as string | null) ?? null,
    sellerId: (row.sellerId as string | null) ?? null,
    paymentHash: row.paymentHash as string,
    network: row.network as string,
    payer: row.payer as string,
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    amount: stroopsColumn(row.amount),
    payTo: row.payTo as string,
    status: row.status as PaymentAttempt['status'],
    failureCode: (row.failureCode as string | null) ?? null,
    failureReason: (row.failureReason as string | null) ?? null,
    expiresAtLedger: row.expiresAtLedger as number,
    createdAt: row.createdAt as Date,
    updatedAt: row.updatedAt as Date,
  };
}

export function createPaymentReadRepository(): PaymentReadRepository {
  return {
    async list(filters, afterId, limit) {
      const where: WhereOptions = {};
      if (filters.resourceId) Object.assign(where, { resourceId: filters.resourceId });
      if (filters.sellerId) Object.assign(where, { sellerId: filters.sellerId });
      if (filters.network) Object.assign(where, { network: filters.network });
      if (filters.asset) Object.assign(where, { assetCode: filters.asset });
      if (filters.status) Object.assign(where, { status: filters.status });
      if (afterId) Object.assign(where, { id: { [Op.lt]: afterId } });
      const rows = await PaymentAttemptModel.findAll({
        where,
        attributes: { exclude: ['authorizationXdr', 'nonce'] },
        order: [['id', 'DESC']],
        limit: limit + 1,
        raw: true,
      });
      return toPage((rows as unknown as Record<string, unknown>[]).map(toPaymentAttempt), limit);
    },
  };
}
