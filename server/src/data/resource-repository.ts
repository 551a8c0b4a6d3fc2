import { Op, QueryTypes, type Sequelize, type WhereOptions } from 'sequelize';
import { CatalogEventModel, ResourceModel, ResourceVersionModel } from './models';
import type { Resource, ResourceRepository, ResourceVersion } from '../domain/catalog/types';
import { toPage } from '../domain/pagination';
import type { CachedTerms, ResourceTermsRef, ResourceTermsRepository } from '../domain/facilitator/types';
import { candidateMatchKeys, splitUrl, urlMatchKey, urlTemplateMatcher } from '../domain/catalog/route-template';
import { pgQuery } from './pg-query';
import { describedFields, listingFields, paymentTermFields } from './listing-rows';
import { amountColumn } from './amount-column';

type Row = Record<string, unknown>;

/** Maps a resources row read through ResourceModel (camelCase attributes) to the domain object. */
export function toResource(row: Row): Resource {
  return {
    ...listingFields(row),
    versionId: row.currentVersionId as string,
    version: row.version as number,
    type: row.type as Resource['type'],
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
    ...describedFields(row),
    ...paymentTermFields(row),
    inputSchema: row.inputSchema as Record<string, unknown>,
    outputSchema: row.outputSchema as Record<string, unknown>,
    extensions: row.extensions as Record<string, unknown>,
    sellerDomain: row.sellerDomain as string,
    createdAt: row.createdAt as Date,
  };
}

function resourceRow(r: Resource) {
  const { versionId, ...rest } = r;
  return { ...rest, amount: amountColumn(r.amount), currentVersionId: versionId, deletedAt: null };
}

function versionRow(v: ResourceVersion) {
  return { ...v, amount: amountColumn(v.amount) };
}

export function createResourceRepository(db: Sequelize): ResourceRepository {
  return {
    async insert(resource, version, event) {
      await db.transaction(async (transaction) => {
        await ResourceModel.create(resourceRow(resource), { transaction });
        await ResourceVersionModel.create(versionRow(version), { transaction });
        await CatalogEventModel.create(
          {
            id: event.id,
            resourceId: resource.id,
            versionId: version.id,
            sellerId: resource.sellerId,
            kind: event.kind,
            createdAt: version.createdAt,
          },
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
        await ResourceVersionModel.create(versionRow(version), { transaction });
        await CatalogEventModel.create(
          {
            id: event.id,
            resourceId: id,
            versionId: version.id,
            sellerId: next.sellerId,
            kind: event.kind,
            createdAt: version.createdAt,
          },
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
          await db.query('UPDATE resources SET current_version_id = NULL WHERE id = :id', {
            replacements: { id },
            transaction,
          });
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
        await ResourceModel.update(
          { status: 'deleted', deletedAt: now, updatedAt: now },
          { where: { id }, transaction },
        );
        await CatalogEventModel.create(
          {
            id: event.id,
            resourceId: id,
            versionId: r.currentVersionId,
            sellerId: r.sellerId,
            kind: event.kind,
            createdAt: now,
          },
          { transaction },
        );
      });
    },

    async settlementStats(resourceId) {
      const [row] = await db.query<{ settled: string; failed: string; last: Date | null }>(
        `SELECT count(*) FILTER (WHERE status = 'settled') AS settled,
                count(*) FILTER (WHERE status = 'settlement_failed' AND failure_code IS DISTINCT
                  FROM 'INSUFFICIENT_BALANCE') AS failed,
                (SELECT max(s.settled_at) FROM settlements s JOIN payment_attempts p ON p.id = s.payment_attempt_id
                  WHERE p.resource_id = :resourceId AND s.status = 'settled') AS last
           FROM payment_attempts WHERE resource_id = :resourceId`,
        { replacements: { resourceId }, type: QueryTypes.SELECT },
      );
      const settled = Number(row.settled);
      const failed = Number(row.failed);
      return {
        settledCount: settled,
        lastSettledAt: row.last,
        successRate: settled + failed > 0 ? settled / (settled + failed) : null,
      };
    },
  };
}

/** Longest URL verify-by-URL looks up; longer ones match nothing. */
const MAX_LOOKUP_URL_LENGTH = 2048;
/** At most this many candidate rows are matched per lookup (one seller rarely has more under one path prefix). */
const MAX_URL_CANDIDATES = 50;

const TERMS_COLUMNS = `id, seller_id AS "sellerId", current_version_id AS "versionId", network, pay_to AS "payTo",
  asset_code AS
  "assetCode",
  asset_issuer AS "assetIssuer", amount`;

function toTerms(r: Row): ResourceTermsRef {
  return {
    id: r.id as string,
    sellerId: r.sellerId as string,
    versionId: r.versionId as string,
    ...paymentTermFields(r),
  };
}

/** Resources whose terms a process keeps (the oldest is dropped beyond it). */
const CACHED_TERMS_MAX = 10_000;

/**
 * The catalog's terms by resource id, kept by the process (issue #31: verify read them on every request). Only
 * verify's recorded path reads it (domain/facilitator/verify-payment.ts), because the record's insert checks the
 * terms again in its own statement (attempt-repository.ts termsGuard): terms changed by any process are caught there
 * and the entry forgotten, and a payment the cached terms refuse is judged again on fresh ones. Settle, /x402 verify
 * and every other reader read the table. Only active resources are kept.
 */
export function cachedResourceTerms(terms: Pick<ResourceTermsRepository, 'resourceRef'>): CachedTerms {
  const kept = new Map<string, ResourceTermsRef>();
  return {
    async resourceRef(id) {
      const hit = kept.get(id);
      if (hit) return hit;
      const fresh = await terms.resourceRef(id);
      if (fresh) {
        kept.set(id, fresh);
        if (kept.size > CACHED_TERMS_MAX) kept.delete(kept.keys().next().value as string);
      }
      return fresh;
    },
    forget(id) {
      kept.delete(id);
    },
  };
}

/**
 * The catalog's terms as the facilitator looks them up, on every verify and settle. Query style: parameterised SQL
 * through pgQuery (prepared statements, parsed once per connection), as the lookups sit on every payment's path.
 */
export function createResourceTermsRepository(db: Sequelize): ResourceTermsRepository {
  async function resourceRef(id: string): Promise<ResourceTermsRef | null> {
    const { rows } = await pgQuery(
      db,
      `SELECT ${TERMS_COLUMNS} FROM resources WHERE id = $1 AND status = 'active'`,
      [id],
      'verify_resource_terms',
    );
    return rows[0] ? toTerms(rows[0]) : null;
  }

  return {
    resourceRef,

    async findResourceByUrl(network, payTo, url) {
      // Indexed lookup (migration 0005): the exact URL, or resource URLs whose static prefix is one of the
      // requested URL's path prefixes; then a cached path-to-regexp matcher on those few candidates. Every seller's
      // listing of the URL is read (not only the payTo's): a payment naming a URL someone cataloged is judged
      // against that listing (issue #29).
      const none = { resource: null, listedWithOtherPayTo: false };
      if (url.length > MAX_LOOKUP_URL_LENGTH || !splitUrl(url)) return none;
      const base = url.split(/[?#]/)[0];
      const { rows } = await pgQuery<{ id: string; url: string; seller_id: string; pay_to: string }>(
        db,
        `SELECT id, url, seller_id, pay_to FROM resources
          WHERE status = 'active' AND network = $1 AND (url = ANY($2::text[]) OR url_match_key = ANY($3::text[]))
          ORDER BY id LIMIT $4::int`,
        [network, [...new Set([url, base])], candidateMatchKeys(base), MAX_URL_CANDIDATES],
        'resource_by_url_any_payee',
      );
      const exact = rows.filter((r) => r.url === url || r.url === base);
      const matched = exact.length ? exact : rows.filter((r) => urlTemplateMatcher(r.url).call(null, url));
      const hits = matched.filter((r) => r.pay_to === payTo);
      const listedWithOtherPayTo = matched.length > hits.length;
      if (hits.length === 0) return { resource: null, listedWithOtherPayTo };
      // Never attribute a payment to one of several sellers: ambiguity links nothing.
      if (new Set(hits.map((h) => h.seller_id)).size > 1) return { resource: null, listedWithOtherPayTo };
      // One seller: the most specific resource URL (longest static prefix) wins.
      const best = hits.reduce((a, b) =>
        (urlMatchKey(b.url) ?? b.url).length > (urlMatchKey(a.url) ?? a.url).length ? b : a,
      );
      return { resource: await resourceRef(best.id), listedWithOtherPayTo };
    },

    async versionAt(resourceId, at) {
      const { rows } = await pgQuery<{ id: string }>(
        db,
        `SELECT id FROM resource_versions WHERE resource_id = $1 AND created_at <= $2::timestamptz ORDER BY ` +
          `version DESC LIMIT 1`,
        [resourceId, at],
        'resource_version_at',
      );
      return rows[0]?.id ?? null;
    },
  };
}
