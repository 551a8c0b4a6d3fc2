import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import { CatalogEventModel, ResourceModel, ResourceVersionModel } from './models';
import { normalizeAmount } from '../domain/amount';
import type { DiscoveryFilters, DiscoveryItem, DiscoveryRepository, RankedItem } from '../domain/discovery/types';

type Row = Record<string, unknown>;

const ITEM_COLUMNS = `d.resource_id AS id, d.seller_id AS "sellerId", d.type, d.name, d.description, d.url,
  d.route_template AS "routeTemplate", d.network, d.pay_to AS "payTo", d.asset_code AS "assetCode",
  d.asset_issuer AS "assetIssuer", d.amount::text AS amount, d.status`;

function toItem(row: Row): DiscoveryItem {
  return {
    id: row.id as string,
    sellerId: row.sellerId as string,
    type: row.type as DiscoveryItem['type'],
    name: row.name as string,
    description: row.description as string,
    url: row.url as string,
    routeTemplate: row.routeTemplate as string,
    network: row.network as string,
    payTo: row.payTo as string,
    assetCode: row.assetCode as string,
    assetIssuer: row.assetIssuer as string,
    amount: normalizeAmount(String(row.amount)),
    status: row.status as DiscoveryItem['status'],
  };
}

/**
 * WHERE clauses of the shared filters, over search_documents aliased `d`. Prices compare as NUMERIC. The index holds
 * only active resources (the indexing worker removes a deleted or disabled resource's document), so no probe into
 * `resources` per row.
 */
function filterSql(filters: DiscoveryFilters, replacements: Record<string, unknown>): string {
  const where = ['d.discoverable'];
  if (filters.network) (where.push('d.network = :network'), (replacements.network = filters.network));
  if (filters.asset) (where.push('d.asset_code = :asset'), (replacements.asset = filters.asset));
  if (filters.type) (where.push('d.type = :type'), (replacements.type = filters.type));
  if (filters.sellerId) (where.push('d.seller_id = :sellerId'), (replacements.sellerId = filters.sellerId));
  if (filters.minPrice) (where.push('d.amount >= CAST(:minPrice AS numeric)'), (replacements.minPrice = filters.minPrice));
  if (filters.maxPrice) (where.push('d.amount <= CAST(:maxPrice AS numeric)'), (replacements.maxPrice = filters.maxPrice));
  if (filters.extension) (where.push(':extension = ANY (d.extension_names)'), (replacements.extension = filters.extension));
  return where.join(' AND ');
}

export function createDiscoveryRepository(db: Sequelize): DiscoveryRepository {
  const select = <T extends object>(sql: string, replacements: Record<string, unknown>, transaction?: Transaction) =>
    db.query<T>(sql, { replacements, type: QueryTypes.SELECT, transaction });

  return {
    async list(filters, afterId, limit) {
      const replacements: Record<string, unknown> = { limit };
      let where = filterSql(filters, replacements);
      if (afterId) (where += ' AND d.resource_id < :afterId'), (replacements.afterId = afterId);
      const rows = await select<Row>(`SELECT ${ITEM_COLUMNS} FROM search_documents d WHERE ${where} ORDER BY d.resource_id DESC LIMIT :limit`, replacements);
      return rows.map(toItem);
    },

    async search(q, filters, after, limit, options) {
      const replacements: Record<string, unknown> = { q, limit, maxAge: options.signalsMaxAgeSeconds, wText: options.textWeight, candidates: options.candidates };
      const where = filterSql(filters, replacements);
      let page = '';
      if (after) (page = 'WHERE (score, id) < (CAST(:afterScore AS float8), :afterId)'), Object.assign(replacements, { afterScore: after.score, afterId: after.id });
      // 1. candidates: the matches of the text query (GIN), the best `candidates` by the stored static score;
      // 2. only those get ts_rank_cd and a full score; 3. the page, keyset on (score, id).
      const rows = await select<Row>(
        `WITH query AS (SELECT websearch_to_tsquery('english', :q) AS tsq),
         -- The query inline (not joined from the CTE) so the planner can choose, by the estimated match count, a
         -- GIN bitmap scan plus top-N sort (narrow queries) or a walk of search_documents_static_idx that stops at
         -- the bound (broad ones). Only the key and static score are carried; the rest is read for the bound alone.
         candidates AS MATERIALIZED (
           SELECT d.resource_id, d.static_score FROM search_documents d
            WHERE d.document @@ websearch_to_tsquery('english', :q) AND ${where}
            ORDER BY d.static_score DESC, d.resource_id DESC
            LIMIT :candidates
         ),
         scored AS (
           SELECT ${ITEM_COLUMNS},
             d.signals_refreshed_at IS NOT NULL
               AND GREATEST(d.signals_refreshed_at, (SELECT synced_at FROM search_signal_sync WHERE id = 1)) > now() - make_interval(secs => :maxAge) AS "signalsFresh",
             CAST(CAST(:wText AS float8) * ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', d.document, query.tsq, 32) + c.static_score AS float8) AS score
           FROM candidates c JOIN search_documents d ON d.resource_id = c.resource_id, query
         )
         SELECT *, score::text AS "scoreText" FROM scored ${page} ORDER BY scored.score DESC, id DESC LIMIT :limit`,
        replacements,
      );
      return rows.map((row): RankedItem => ({ ...toItem(row), score: String(row.scoreText), signalsFresh: Boolean(row.signalsFresh) }));
    },

    async indexLag() {
      const [row] = await select<{ since: Date | null; lag: number | null }>(
        'SELECT unindexed_since AS since, EXTRACT(EPOCH FROM now() - unindexed_since)::float8 AS lag FROM search_index_state WHERE id = 1',
        {},
      );
      return { pending: Boolean(row?.since), lagSeconds: Math.max(0, Number(row?.lag ?? 0)) };
    },

    async walletOwner(address) {
      const rows = await select<{ id: string }>('SELECT id FROM sellers WHERE wallet_address = :address', { address });
      return rows[0]?.id ?? null;
    },

    async mcpToolOwner(url, toolName, excludeResourceId) {
      const rows = await select<{ id: string; sellerId: string }>(
        `SELECT id, seller_id AS "sellerId" FROM resources
          WHERE type = 'mcp' AND status = 'active' AND url = :url
            AND COALESCE(extensions->'mcp'->>'toolName', extensions->'mcp'->>'tool') = :toolName
            AND id <> :exclude
          ORDER BY id LIMIT 1`,
        { url, toolName, exclude: excludeResourceId ?? '' },
      );
      return rows[0] ? { resourceId: rows[0].id, sellerId: rows[0].sellerId } : null;
    },

    async declaration(resourceId) {
      const rows = await select<{ payTo: string | null; trusted: boolean }>(
        'SELECT declared_pay_to AS "payTo", trusted FROM catalog_declarations WHERE resource_id = :resourceId',
        { resourceId },
      );
      return rows[0] ?? null;
    },

    async catalog(write) {
      return db.transaction(async (transaction) => {
        const { resource: r, version, event } = write;
        if (write.mcpTool) {
          // Serialise catalogs of the same tool on the same server, then re-check under the lock.
          await db.query('SELECT pg_advisory_xact_lock(hashtext(:key))', { replacements: { key: `mcp:${write.mcpTool.url}#${write.mcpTool.toolName}` }, transaction });
          const [owner] = await select<{ id: string }>(
            `SELECT id FROM resources WHERE type = 'mcp' AND status = 'active' AND url = :url
               AND COALESCE(extensions->'mcp'->>'toolName', extensions->'mcp'->>'tool') = :toolName AND id <> :id LIMIT 1`,
            { url: write.mcpTool.url, toolName: write.mcpTool.toolName, id: r.id },
            transaction,
          );
          if (owner) return { status: 'mcp_conflict' as const, resourceId: owner.id };
        }
        const { versionId, ...rest } = r;
        const row = { ...rest, currentVersionId: versionId, deletedAt: null };
        if (write.mode === 'create') {
          await ResourceModel.create(row, { transaction });
        } else if (write.mode === 'update') {
          const { id, createdAt: _c, ...changes } = row;
          const [count] = await ResourceModel.update(changes, { where: { id, version: write.expectedVersion }, transaction });
          if (count === 0) return { status: 'version_conflict' as const };
        } else {
          const [current] = await select<{ version: number; status: string }>('SELECT version, status FROM resources WHERE id = :id FOR UPDATE', { id: r.id }, transaction);
          if (!current || current.version !== write.expectedVersion || current.status !== 'active') return { status: 'version_conflict' as const };
        }
        if (version) await ResourceVersionModel.create({ ...version }, { transaction });
        await CatalogEventModel.create(
          { id: event.id, resourceId: r.id, versionId: event.versionId, sellerId: r.sellerId, kind: 'cataloged', createdAt: new Date() },
          { transaction },
        );
        // The index is now behind (written only when it was up to date: no lock on the row otherwise).
        await db.query('UPDATE search_index_state SET unindexed_since = now(), updated_at = now() WHERE id = 1 AND unindexed_since IS NULL', { transaction });
        await db.query(
          `INSERT INTO catalog_declarations (resource_id, seller_id, declared_pay_to, trusted, declared_at)
           VALUES (:resourceId, :sellerId, :payTo, :trusted, now())
           ON CONFLICT (resource_id) DO UPDATE SET declared_pay_to = EXCLUDED.declared_pay_to, trusted = EXCLUDED.trusted, declared_at = now()`,
          { replacements: { resourceId: r.id, sellerId: r.sellerId, payTo: write.declaration.payTo, trusted: write.declaration.trusted }, transaction },
        );
        return { status: 'ok' as const };
      });
    },
  };
}
