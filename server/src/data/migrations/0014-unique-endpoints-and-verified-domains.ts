import type { Migration } from './types';

/**
 * Issue #22, duplicates (named 0014: main took 0013 meanwhile):
 * - one active http resource per seller, method and URL (the method is the Bazaar extension's
 *   `info.input.method`, GET when absent; the same expression as catalog/endpoint.ts `endpointMethod`). MCP
 *   resources share a server URL between tools; their tool names are unique already (mcp_tools).
 *   Duplicates made before this migration stay listed but are soft-deleted except the oldest, each with a
 *   `deleted` catalog event, so the index drops them (their payments and receipts keep pointing at them).
 * - a verified domain belongs to one seller: at most one seller row per domain with domain_verified_at set.
 */
export const migration: Migration = {
  name: '0014-unique-endpoints-and-verified-domains',
  async up(q) {
    await q(`
      WITH ranked AS (
        SELECT id, row_number() OVER (
                 PARTITION BY seller_id, url, upper(coalesce(extensions #>> '{bazaar,info,input,method}', 'GET'))
                 ORDER BY created_at, id) AS n
          FROM resources
         WHERE status = 'active' AND type = 'http'
      ), dropped AS (
        UPDATE resources r SET status = 'deleted', deleted_at = now(), updated_at = now()
          FROM ranked WHERE ranked.id = r.id AND ranked.n > 1
        RETURNING r.id, r.current_version_id, r.seller_id
      )
      INSERT INTO catalog_events (id, resource_id, version_id, seller_id, kind)
      SELECT 'cev_' || upper(substr(md5(id || clock_timestamp()::text), 1, 26)), id, current_version_id,
        seller_id, 'deleted' FROM dropped`);
    await q(`
      CREATE UNIQUE INDEX resources_active_endpoint_uq
        ON resources (seller_id, url, upper(coalesce(extensions #>> '{bazaar,info,input,method}', 'GET')))
        WHERE status = 'active' AND type = 'http'`);
    await q(
      `CREATE UNIQUE INDEX sellers_verified_domain_uq ON sellers (lower(domain)) WHERE domain_verified_at IS NOT NULL`,
    );
  },
};
