import { QueryTypes, type Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { toSeller } from './seller-repository';
import { amountColumn } from './amount-column';
import type { CatalogWrite, CatalogWriteRepository } from '../domain/discovery/types';

/**
 * The catalog write of POST /v1/discovery/catalog and the facts its rules read. Every statement is positional SQL:
 * through pgQuery, or through the transaction's connection (`db.query` with `bind`) when an MCP tool's lock must be
 * held across the re-check and the write. Search is data/search-repository.ts.
 */

type Row = Record<string, unknown>;

/**
 * One catalog write in one statement (atomic on its own; the foreign keys between its rows are checked at its end):
 * the resource row (`create`: insert; `update`: compare-and-set on its version; `unchanged`: locked and checked to be
 * at the expected version and active), the new version when there is one, the catalog event, the index-behind mark
 * (written only when the index was up to date and the write happened: no lock on the row otherwise) and the
 * declaration. Answers `n` = 1 when the resource row was written or found, 0 on a version conflict.
 */
function catalogStatement(write: CatalogWrite): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const $ = (v: unknown) => (values.push(v), `$${values.length}`);
  const r = write.resource;
  const id = $(r.id);
  const seller = $(r.sellerId);
  let resource: string;
  if (write.mode === 'unchanged') {
    resource =
      `SELECT id FROM resources WHERE id = ${id} AND version = ${$(write.expectedVersion)} AND status = 'active' ` +
      `FOR UPDATE`;
  } else {
    const cols = {
      current_version_id: $(r.versionId),
      version: $(r.version),
      type: $(r.type),
      name: $(r.name),
      description: $(r.description),
      url: $(r.url),
      route_template: $(r.routeTemplate),
      network: $(r.network),
      pay_to: $(r.payTo),
      asset_code: $(r.assetCode),
      asset_issuer: $(r.assetIssuer),
      amount: `CAST(${$(amountColumn(r.amount))} AS numeric)`,
      input_schema: `CAST(${$(JSON.stringify(r.inputSchema))} AS jsonb)`,
      output_schema: `CAST(${$(JSON.stringify(r.outputSchema))} AS jsonb)`,
      extensions: `CAST(${$(JSON.stringify(r.extensions ?? {}))} AS jsonb)`,
      status: $(r.status),
      deleted_at: 'NULL',
      updated_at: $(r.updatedAt),
    };
    resource =
      write.mode === 'create'
        ? `INSERT INTO resources (id, seller_id, ${Object.keys(cols).join(', ')}, created_at)
         VALUES (${id}, ${seller}, ${Object.values(cols).join(', ')}, ${$(r.createdAt)}) RETURNING id`
        : `UPDATE resources SET seller_id = ${seller}, ${Object.entries(cols)
            .map(([k, v]) => `${k} = ${v}`)
            .join(', ')}
          WHERE id = ${id} AND version = ${$(write.expectedVersion)} RETURNING id`;
  }
  const v = write.version;
  const version = v
    ? `v AS (
         INSERT INTO resource_versions (id, resource_id, version, name, description, url, route_template,
           network, pay_to, asset_code,
                                        asset_issuer, amount,
                                          input_schema, output_schema, extensions, seller_domain, created_at)
         SELECT ${$(v.id)}, r.id, ${$(v.version)}, ${$(v.name)}, ${$(v.description)}, ${$(v.url)},
           ${$(v.routeTemplate)}, ${$(v.network)},
                ${$(v.payTo)}, ${$(v.assetCode)}, ${$(v.assetIssuer)}, CAST(${$(amountColumn(v.amount))} AS
                  numeric), CAST(${$(JSON.stringify(v.inputSchema))} AS jsonb),
                CAST(${$(JSON.stringify(v.outputSchema))} AS jsonb),
                  CAST(${$(JSON.stringify(v.extensions ?? {}))} AS jsonb), ${$(v.sellerDomain)},
                ${$(v.createdAt)} FROM r),`
    : '';
  const text = `WITH r AS (${resource}),
     ${version}
     e AS (
       INSERT INTO catalog_events (id, resource_id, version_id, seller_id, kind, created_at)
       SELECT ${$(write.event.id)}, r.id, ${$(write.event.versionId)}, ${seller}, 'cataloged', now() FROM r),
     behind AS (
       UPDATE search_index_state SET unindexed_since = now(), updated_at = now()
        WHERE id = 1 AND unindexed_since IS NULL AND EXISTS (SELECT 1 FROM r)),
     d AS (
       INSERT INTO catalog_declarations (resource_id, seller_id, declared_pay_to, trusted, declared_at)
       SELECT r.id, ${seller}, ${$(write.declaration.payTo)}, ${$(write.declaration.trusted)}, now() FROM r
       ON CONFLICT (resource_id) DO UPDATE SET declared_pay_to = EXCLUDED.declared_pay_to, trusted =
         EXCLUDED.trusted, declared_at = now())
     SELECT count(*)::int AS n FROM r`;
  return { text, values };
}

/** The other active MCP resource offering this tool on this URL (the oldest by id), if any. */
const MCP_TOOL_OWNER_SQL = `SELECT id, seller_id AS "sellerId" FROM resources
  WHERE type = 'mcp' AND status = 'active' AND url = $1
    AND COALESCE(extensions->'mcp'->>'toolName', extensions->'mcp'->>'tool') = $2
    AND id <> $3
  ORDER BY id LIMIT 1`;

export function createCatalogWriteRepository(db: Sequelize): CatalogWriteRepository {
  return {
    async walletOwner(address) {
      const { rows } = await pgQuery<{ id: string }>(db, 'SELECT id FROM sellers WHERE wallet_address = $1', [address]);
      return rows[0]?.id ?? null;
    },

    async mcpToolOwner(url, toolName, excludeResourceId) {
      const { rows } = await pgQuery<{ id: string; sellerId: string }>(db, MCP_TOOL_OWNER_SQL, [
        url,
        toolName,
        excludeResourceId ?? '',
      ]);
      return rows[0] ? { resourceId: rows[0].id, sellerId: rows[0].sellerId } : null;
    },

    async declaration(resourceId) {
      const { rows } = await pgQuery<{ payTo: string | null; trusted: boolean }>(
        db,
        'SELECT declared_pay_to AS "payTo", trusted FROM catalog_declarations WHERE resource_id = $1',
        [resourceId],
      );
      return rows[0] ?? null;
    },

    async catalogFacts(sellerId, payTo, url) {
      const {
        rows: [row],
      } = await pgQuery<Row>(
        db,
        `SELECT s.id, s.display_name AS "displayName", s.wallet_address AS "walletAddress", s.domain,
          s.domain_verified_at AS "domainVerifiedAt",
                s.created_at AS "createdAt", s.updated_at AS "updatedAt",
                (SELECT o.id FROM sellers o WHERE o.wallet_address = $2) AS "payToOwner",
                EXISTS (SELECT 1 FROM sellers x WHERE x.domain = s.domain AND x.id <> s.id AND
                  x.domain_verified_at IS NOT NULL) AS "domainVerifiedByOther",
                host_owner(url_host($3)) AS "hostOwner"
           FROM sellers s WHERE s.id = $1`,
        [sellerId, payTo, url],
        'catalog_facts',
      );
      if (!row) return { seller: null, payToOwner: null, domainVerifiedByOther: false, hostOwner: null };
      return {
        seller: toSeller(row),
        payToOwner: (row.payToOwner as string | null) ?? null,
        domainVerifiedByOther: Boolean(row.domainVerifiedByOther),
        hostOwner: (row.hostOwner as string | null) ?? null,
      };
    },

    async catalog(write) {
      const statement = catalogStatement(write);
      const conflict = () => ({ status: 'version_conflict' as const });
      if (!write.mcpTool) {
        const { rows } = await pgQuery<{ n: number }>(db, statement.text, statement.values);
        return rows[0].n === 1 ? { status: 'ok' as const } : conflict();
      }
      const tool = write.mcpTool;
      return db.transaction(async (transaction) => {
        const q = <T extends object>(text: string, bind: unknown[]) =>
          db.query<T>(text, { bind, transaction, type: QueryTypes.SELECT });
        // Serialise catalogs of the same tool on the same server, then re-check under the lock.
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`mcp:${tool.url}#${tool.toolName}`]);
        const [owner] = await q<{ id: string }>(MCP_TOOL_OWNER_SQL, [tool.url, tool.toolName, write.resource.id]);
        if (owner) return { status: 'mcp_conflict' as const, resourceId: owner.id };
        const [row] = await q<{ n: number }>(statement.text, statement.values);
        return row.n === 1 ? { status: 'ok' as const } : conflict();
      });
    },
  };
}
