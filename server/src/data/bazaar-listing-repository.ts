import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { toListingItem } from './listing-rows';
import type { BazaarCatalogDetails, BazaarCatalogRepository, BazaarFilters } from '../domain/discovery/bazaar';
import type { DiscoveryItem } from '../domain/discovery/types';

type Row = Record<string, unknown>;

/** The listing columns (as data/search-repository.ts's items) plus the Bazaar's details, over `d`, `r`, `s`. */
const COLUMNS = `d.resource_id AS id, d.seller_id AS "sellerId", d.type, d.name, d.description, d.url,
  d.route_template AS "routeTemplate", d.network, d.pay_to AS "payTo", d.asset_code AS "assetCode",
  d.asset_issuer AS "assetIssuer", d.amount::text AS amount, d.status, d.host_verified AS "hostVerified",
  d.mcp_tool_name AS "mcpToolName", r.updated_at AS "updatedAt", r.extensions -> 'bazaar' -> 'tags' AS "bazaarTags",
  s.display_name AS "sellerName"`;

const FROM = `search_documents d JOIN resources r ON r.id = d.resource_id LEFT JOIN sellers s ON s.id = d.seller_id`;

const details = (row: Row): BazaarCatalogDetails => ({
  updatedAt: new Date(row.updatedAt as string),
  sellerName: (row.sellerName as string | null) ?? null,
  bazaarTags: row.bazaarTags ?? null,
  mcpToolName: (row.mcpToolName as string | null) || null,
});

const toItem = (row: Row): DiscoveryItem & BazaarCatalogDetails => ({ ...toListingItem(row), ...details(row) });

/**
 * The Bazaar's read of the listed catalog (issue #30): the documents the discovery list serves (discoverable, host not
 * claimed by another seller), with the x402 list filters in SQL and offset paging with an exact total. `extensions`
 * is any key of the resource's `extensions` object (the index keeps only bazaar and mcp, so the resource is read).
 */
export function createBazaarListingRepository(db: Sequelize): BazaarCatalogRepository {
  return {
    async list(filters: BazaarFilters, offset: number, limit: number) {
      const values: unknown[] = [];
      const where = ['d.discoverable', 'NOT d.host_claimed'];
      const add = (sql: (n: number) => string, v: unknown) => (values.push(v), where.push(sql(values.length)));
      if (filters.type) add((n) => `d.type = $${n}`, filters.type);
      if (filters.payTo) add((n) => `d.pay_to = $${n}`, filters.payTo);
      if (filters.network) add((n) => `d.network = $${n}`, filters.network);
      if (filters.extension) add((n) => `r.extensions ? $${n}`, filters.extension);
      if (filters.scheme !== undefined && filters.scheme !== 'exact') where.push('false');
      const w = where.join(' AND ');
      const [page, count] = await Promise.all([
        pgQuery<Row>(
          db,
          `SELECT ${COLUMNS} FROM ${FROM} WHERE ${w} ORDER BY d.resource_id DESC OFFSET $${values.length + 1} ` +
            `LIMIT $${values.length + 2}`,
          [...values, offset, limit],
        ),
        pgQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM ${FROM} WHERE ${w}`, values),
      ]);
      return { items: page.rows.map(toItem), total: count.rows[0].n };
    },

    async details(ids: string[]) {
      const { rows } = await pgQuery<Row>(
        db,
        `SELECT ${COLUMNS} FROM ${FROM} WHERE d.resource_id = ANY(CAST($1 AS text[]))`,
        [ids],
      );
      return new Map(rows.map((r) => [r.id as string, details(r)]));
    },
  };
}
