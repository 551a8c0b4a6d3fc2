import { Op, QueryTypes, type Sequelize, type WhereOptions } from 'sequelize';
import { CatalogEventModel, ResourceModel, ResourceVersionModel } from './models';
import type { Resource, ResourceRepository, ResourceVersion } from '../domain/catalog/types';
import { normalizeAmount } from '../domain/amount';
import { toPage } from '../domain/pagination';

type Row = Record<string, unknown>;

/** Maps a resources row read through ResourceModel (camelCase attributes) to the domain object. */
export function toResource(row: Row): Resource {
  return {
    id: row.id as string,
    sellerId: row.sellerId as string,
    versionId: row.currentVersionId as string,
    version: row.version as number,
    type: row.type as Resource['type'],
    name: row.name as string,
    description: row.description as string,
    url: row.url as string,
    routeTemplate: row.routeTemplate as string,
    network: row.network as string,
    payTo: row.payTo as string,
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    amount: normalizeAmount(String(row.amount)),
    inputSchema: row.inputSchema as Record<string, unknown>,
    outputSchema: row.outputSchema as Record<string, unknown>,
    extensions: row.extensions as Record<string, unknown>,
    status: row.status as Resource['status'],
    createdAt: row.createdAt as Date,
    updatedAt: row.updatedAt as Date,
  };
}

function toVersion(row: Row): ResourceVersion {
  return {
    id: row.id as string,
    resourceId: row.resourceId as string,
    version: row.version as number,
    name: row.name as string,
    description: row.description as string,
    url: row.url as string,
    routeTemplate: row.routeTemplate as string,
    network: row.network as string,
    payTo: row.payTo as string,
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    amount: normalizeAmount(String(row.amount)),
    inputSchema: row.inputSchema as Record<string, unknown>,
    outputSchema: row.outputSchema as Record<string, unknown>,
    extensions: row.extensions as Record<string, unknown>,
    sellerDomain: row.sellerDomain as string,
    createdAt: row.createdAt as Date,
  };
}

function resourceRow(r: Resource) {
  const { versionId, ...rest } = r;
  return { ...rest, currentVersionId: versionId, deletedAt: null };
}

export function createResourceRepository(db: Sequelize): ResourceRepository {
  return {
    async insert(resource, version, event) {
      await db.transaction(async (transaction) => {
        await ResourceModel.create(resourceRow(resource), { transaction });
        await ResourceVersionModel.create({ ...version }, { transaction });
        await CatalogEventModel.create(
          { id: event.id, resourceId: resource.id, versionId: version.id, sellerId: resource.sellerId, kind: event.kind, createdAt: version.createdAt },
          { transaction },
        );
      });
    },

    async findActiveEndpoint(sellerId, url, method) {
      const rows = await db.query<{ id: string }>(
        `SELECT id FROM resources
          WHERE seller_id = :sellerId AND url = :url AND status = 'active' AND type = 'http'
            AND upper(coalesce(extensions #>> '{bazaar,info,input,method}', 'GET')) = :method
          ORDER BY created_at, id LIMIT 1`,
        { replacements: { sellerId, url, method }, type: QueryTypes.SELECT },
      );
      return rows[0]?.id ?? null;
    },

    async findById(id) {
      const row = await ResourceModel.findByPk(id, { raw: true });
      return row ? toResource(row as unknown as Row) : null;
    },

    async list(filters, afterId, limit) {
      const where: WhereOptions = { status: filters.status ?? 'active' };
      if (filters.sellerId) Object.assign(where, { sellerId: filters.sellerId });
      if (filters.network) Object.assign(where, { network: filters.network });
      if (filters.asset) Object.assign(where, { assetCode: filters.asset });
      if (filters.type) Object.assign(where, { type: filters.type });
      if (afterId) Object.assign(where, { id: { [Op.lt]: afterId } });
      const rows = await ResourceModel.findAll({ where, order: [['id', 'DESC']], limit: limit + 1, raw: true });
      return toPage((rows as unknown as Row[]).map(toResource), limit);
    },

    async versions(resourceId, afterId, limit) {
      const where: WhereOptions = { resourceId };
      if (afterId) Object.assign(where, { id: { [Op.lt]: afterId } });
      const rows = await ResourceVersionModel.findAll({ where, order: [['id', 'DESC']], limit: limit + 1, raw: true });
      return toPage((rows as unknown as Row[]).map(toVersion), limit);
    },

    async saveNewVersion(next, version, expectedVersion, event) {
      return db.transaction(async (transaction) => {
        const { id, createdAt: _createdAt, ...changes } = resourceRow(next);
        const [count] = await ResourceModel.update(changes, { where: { id, version: expectedVersion }, transaction });
        if (count === 0) return false;
        await ResourceVersionModel.create({ ...version }, { transaction });
        await CatalogEventModel.create(
          { id: event.id, resourceId: id, versionId: version.id, sellerId: next.sellerId, kind: event.kind, createdAt: version.createdAt },
          { transaction },
        );
        return true;
      });
    },

    async deleteIfUnpaid(id) {
      try {
        return await db.transaction(async (transaction) => {
          const [paid] = await db.query<{ paid: boolean }>(
            `SELECT EXISTS (SELECT 1 FROM payment_attempts WHERE resource_id = :id)
                 OR EXISTS (SELECT 1 FROM receipts WHERE resource_id = :id) AS paid`,
            { replacements: { id }, type: QueryTypes.SELECT, transaction },
          );
          if (paid.paid) return 'has_payments' as const;
          await db.query('UPDATE resources SET current_version_id = NULL WHERE id = :id', { replacements: { id }, transaction });
          await ResourceModel.destroy({ where: { id }, transaction });
          return 'deleted' as const;
        });
      } catch (err) {
        // A payment attempt inserted concurrently makes the delete violate its foreign key: keep the resource.
        if ((err as { name?: string }).name === 'SequelizeForeignKeyConstraintError') return 'has_payments';
        throw err;
      }
    },

    async softDelete(id, event) {
      await db.transaction(async (transaction) => {
        const now = new Date();
        const row = await ResourceModel.findByPk(id, { transaction, lock: transaction.LOCK.UPDATE, raw: true });
        if (!row) return;
        const r = row as unknown as Row;
        if (r.status === 'deleted') return;
        await ResourceModel.update({ status: 'deleted', deletedAt: now, updatedAt: now }, { where: { id }, transaction });
        await CatalogEventModel.create(
          { id: event.id, resourceId: id, versionId: r.currentVersionId, sellerId: r.sellerId, kind: event.kind, createdAt: now },
          { transaction },
        );
      });
    },

    async settlementStats(resourceId) {
      const [row] = await db.query<{ settled: string; failed: string; last: Date | null }>(
        `SELECT count(*) FILTER (WHERE status = 'settled') AS settled,
                count(*) FILTER (WHERE status = 'settlement_failed') AS failed,
                (SELECT max(s.settled_at) FROM settlements s JOIN payment_attempts p ON p.id = s.payment_attempt_id
                  WHERE p.resource_id = :resourceId AND s.status = 'settled') AS last
           FROM payment_attempts WHERE resource_id = :resourceId`,
        { replacements: { resourceId }, type: QueryTypes.SELECT },
      );
      const settled = Number(row.settled);
      const failed = Number(row.failed);
      return { settledCount: settled, lastSettledAt: row.last, successRate: settled + failed > 0 ? settled / (settled + failed) : null };
    },
  };
}
