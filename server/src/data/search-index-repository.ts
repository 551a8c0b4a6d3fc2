import { toResource } from './resource-repository';
import { ResourceModel } from './models';
import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import { normalizeAmount } from '../domain/amount';
import type { IndexSnapshot, SearchDocument } from '../domain/discovery/indexing';

type Row = Record<string, unknown>;

export type IndexOutcome = 'indexed' | 'rejected' | 'removed';

/**
 * Writes of the search index. `indexResource` runs in one transaction under a per-resource advisory lock: it reads
 * the resource and every fact the anti-poisoning rules need, lets the caller build the document, writes (or
 * deletes) it, refreshes its ranking signals and marks the resource's catalog events indexed. Running it twice
 * gives the same result (idempotent).
 */
export interface SearchIndexRepository {
  resourceOfEvent(catalogEventId: string): Promise<string | null>;
  indexResource(resourceId: string, build: (snap: IndexSnapshot) => SearchDocument | null): Promise<IndexOutcome>;
  /** Resources with catalog events left unindexed for at least `olderThanSeconds` (lost or failed jobs). */
  staleResources(olderThanSeconds: number, limit: number): Promise<string[]>;
  /**
   * Refreshes seller verification, settlement success (30 days) and uptime of one document, or of every document
   * whose signals changed (a full pass; it also records the pass in search_signal_sync). Returns rows written.
   */
  refreshSignals(resourceId?: string, transaction?: Transaction): Promise<number>;
  /** Records that the index is behind (a catalog change was recorded); a no-op while it already is. */
  markBehind(): Promise<void>;
  /**
   * Recomputes when the oldest unindexed catalog event was recorded (search_index_state, read by every search). Every
   * indexResource does it as its last step; the search-sync pass calls this. Writes only when the value changes.
   */
  recordLag(): Promise<void>;
  counts(): Promise<{ resources: number; activeSellers: number; lagSeconds: number; volume: Array<{ network: string; asset: string; amount: number }> }>;
}


const SIGNALS_SQL = `
  UPDATE search_documents d SET
    seller_verified = st.verified,
    settlement_success = st.rate,
    settlement_count = st.settled,
    uptime = st.uptime, -- share of passed 402 probes over 7 days (conformance runner); NULL, neutral, before the first
    signals_refreshed_at = now()
  FROM (
    SELECT d2.resource_id,
           EXISTS (SELECT 1 FROM sellers s WHERE s.id = d2.seller_id AND s.domain_verified_at IS NOT NULL) AS verified,
           (SELECT CASE WHEN count(*) > 0 THEN (count(*) FILTER (WHERE p.status = 'settled'))::float8 / count(*) END
              FROM payment_attempts p
             WHERE p.resource_id = d2.resource_id AND p.status IN ('settled', 'settlement_failed')
               AND p.created_at > now() - interval '30 days') AS rate,
           (SELECT count(*) FROM payment_attempts p
             WHERE p.resource_id = d2.resource_id AND p.status = 'settled' AND p.created_at > now() - interval '30 days')::int AS settled,
           (SELECT avg(CASE WHEN pr.passed THEN 1.0 ELSE 0.0 END)::float8 FROM resource_probes pr
             WHERE pr.resource_id = d2.resource_id AND pr.checked_at > now() - interval '7 days') AS uptime
      FROM search_documents d2 WHERE (:resourceId = '' OR d2.resource_id = :resourceId)
  ) st
  WHERE st.resource_id = d.resource_id
    -- a full pass rewrites only documents whose signals changed (one resource: always, it was just indexed)
    AND (:resourceId <> '' OR d.signals_refreshed_at IS NULL OR d.uptime IS DISTINCT FROM st.uptime
         OR d.seller_verified IS DISTINCT FROM st.verified
         OR d.settlement_success IS DISTINCT FROM st.rate
         OR d.settlement_count IS DISTINCT FROM st.settled)`;

export function createSearchIndexRepository(db: Sequelize): SearchIndexRepository {
  const select = <T extends object>(sql: string, replacements: Record<string, unknown>, transaction?: Transaction) =>
    db.query<T>(sql, { replacements, type: QueryTypes.SELECT, transaction });

  /**
   * The last step of an indexing transaction (and of the search-sync pass): lock the lag row, then recompute it.
   * Under READ COMMITTED the recompute's snapshot is taken after the lock is granted, so it sees every indexing
   * transaction that held the lock before (they have committed) and this one's own marks; a transaction still
   * indexing will recompute after it. So the row is exact once indexing is quiet: search reads it instead of
   * counting. Only the commit phase of concurrent indexers is serialised. (A catalog event committed while the row
   * already said "behind" and cleared by a recompute that could not see it yet is reported once it is indexed.)
   */
  const recordLagIn = async (transaction: Transaction) => {
    await db.query('SELECT 1 FROM search_index_state WHERE id = 1 FOR UPDATE', { transaction });
    await db.query(
      `UPDATE search_index_state s SET unindexed_since = o.since, updated_at = now()
         FROM (SELECT min(created_at) AS since FROM catalog_events WHERE indexed_at IS NULL) o
        WHERE s.id = 1 AND s.unindexed_since IS DISTINCT FROM o.since`,
      { transaction },
    );
  };

  const repo: SearchIndexRepository = {
    async resourceOfEvent(catalogEventId) {
      const [row] = await select<{ resourceId: string }>('SELECT resource_id AS "resourceId" FROM catalog_events WHERE id = :catalogEventId', { catalogEventId });
      return row?.resourceId ?? null;
    },

    async indexResource(resourceId, build) {
      return db.transaction(async (transaction) => {
        await db.query('SELECT pg_advisory_xact_lock(hashtext(:key))', { replacements: { key: `index:${resourceId}` }, transaction });
        const [maxEvent] = await select<{ id: string | null }>(
          'SELECT max(id) AS id FROM catalog_events WHERE resource_id = :resourceId AND indexed_at IS NULL',
          { resourceId },
          transaction,
        );
        const row = await ResourceModel.findByPk(resourceId, { raw: true, transaction });
        const resource = row ? toResource(row as unknown as Row) : null;
        let snap: IndexSnapshot = { resource, seller: null, declaration: null, payToOwner: null, domainVerifiedByOther: false, mcpToolOwner: null };
        if (resource && resource.status === 'active') {
          const [seller] = await select<{ id: string; walletAddress: string; domain: string; verifiedAt: Date | null }>(
            'SELECT id, wallet_address AS "walletAddress", domain, domain_verified_at AS "verifiedAt" FROM sellers WHERE id = :id',
            { id: resource.sellerId },
            transaction,
          );
          const [declaration] = await select<{ payTo: string | null; trusted: boolean }>(
            'SELECT declared_pay_to AS "payTo", trusted FROM catalog_declarations WHERE resource_id = :resourceId',
            { resourceId },
            transaction,
          );
          const [owner] = await select<{ id: string }>('SELECT id FROM sellers WHERE wallet_address = :a', { a: resource.payTo }, transaction);
          const [other] = seller
            ? await select<{ n: string }>(
                'SELECT count(*) AS n FROM sellers WHERE domain = :domain AND id <> :id AND domain_verified_at IS NOT NULL',
                { domain: seller.domain, id: seller.id },
                transaction,
              )
            : [{ n: '0' }];
          const mcp = resource.extensions?.mcp as Record<string, unknown> | undefined;
          const toolName = resource.type === 'mcp' && mcp ? ((mcp.toolName ?? mcp.tool) as string | undefined) : undefined;
          const [tool] = toolName
            ? await select<{ resourceId: string; sellerId: string }>(
                `SELECT id AS "resourceId", seller_id AS "sellerId" FROM resources
                  WHERE type = 'mcp' AND status = 'active' AND url = :url AND id <> :id
                    AND COALESCE(extensions->'mcp'->>'toolName', extensions->'mcp'->>'tool') = :toolName
                  ORDER BY id LIMIT 1`,
                { url: resource.url, id: resource.id, toolName },
                transaction,
              )
            : [];
          snap = {
            resource,
            seller: seller ? { id: seller.id, walletAddress: seller.walletAddress, domain: seller.domain, domainVerified: seller.verifiedAt !== null } : null,
            declaration: declaration ?? null,
            payToOwner: owner?.id ?? null,
            domainVerifiedByOther: Number(other.n) > 0,
            mcpToolOwner: tool ?? null,
          };
        }
        const doc = build(snap);
        let outcome: IndexOutcome;
        if (!doc) {
          await db.query('DELETE FROM search_documents WHERE resource_id = :resourceId', { replacements: { resourceId }, transaction });
          outcome = 'removed';
        } else {
          await db.query(
            `INSERT INTO search_documents (resource_id, seller_id, version_id, resource_version, type, name, description, url,
               route_template, network, pay_to, asset_code, asset_issuer, amount, status, extension_names, mcp_tool_name,
               discoverable, rejection_reasons, document, metadata_quality, schema_completeness, seller_verified, indexed_at)
             VALUES (:resourceId, :sellerId, :versionId, :version, :type, :name, :description, :url, :routeTemplate, :network,
               :payTo, :assetCode, :assetIssuer, CAST(:amount AS numeric), :status, CAST(:extensionNames AS text[]), :mcpToolName,
               :discoverable, CAST(:rejectionReasons AS jsonb),
               setweight(to_tsvector('english', :name), 'A') || setweight(to_tsvector('english', :description), 'B')
                 || setweight(to_tsvector('english', :schemaText), 'C'),
               :metadataQuality, :schemaCompleteness, :sellerVerified, now())
             ON CONFLICT (resource_id) DO UPDATE SET
               seller_id = EXCLUDED.seller_id, version_id = EXCLUDED.version_id, resource_version = EXCLUDED.resource_version,
               type = EXCLUDED.type, name = EXCLUDED.name, description = EXCLUDED.description, url = EXCLUDED.url,
               route_template = EXCLUDED.route_template, network = EXCLUDED.network, pay_to = EXCLUDED.pay_to,
               asset_code = EXCLUDED.asset_code, asset_issuer = EXCLUDED.asset_issuer, amount = EXCLUDED.amount,
               status = EXCLUDED.status, extension_names = EXCLUDED.extension_names, mcp_tool_name = EXCLUDED.mcp_tool_name,
               discoverable = EXCLUDED.discoverable, rejection_reasons = EXCLUDED.rejection_reasons, document = EXCLUDED.document,
               metadata_quality = EXCLUDED.metadata_quality, schema_completeness = EXCLUDED.schema_completeness,
               seller_verified = EXCLUDED.seller_verified, indexed_at = now()`,
            {
              replacements: {
                ...doc,
                extensionNames: `{${doc.extensionNames.join(',')}}`,
                rejectionReasons: JSON.stringify(doc.rejectionReasons),
              },
              transaction,
            },
          );
          await repo.refreshSignals(resourceId, transaction);
          outcome = doc.discoverable ? 'indexed' : 'rejected';
        }
        if (maxEvent?.id) {
          await db.query('UPDATE catalog_events SET indexed_at = now() WHERE resource_id = :resourceId AND indexed_at IS NULL AND id <= :maxId', {
            replacements: { resourceId, maxId: maxEvent.id },
            transaction,
          });
        }
        await recordLagIn(transaction);
        return outcome;
      });
    },

    async staleResources(olderThanSeconds, limit) {
      const rows = await select<{ resourceId: string }>(
        `SELECT DISTINCT resource_id AS "resourceId" FROM (
           SELECT resource_id FROM catalog_events WHERE indexed_at IS NULL AND created_at < now() - make_interval(secs => :age)
           ORDER BY created_at LIMIT :limit) e`,
        { age: olderThanSeconds, limit },
      );
      return rows.map((r) => r.resourceId);
    },

    async refreshSignals(resourceId, transaction) {
      const [, count] = (await db.query(SIGNALS_SQL, { replacements: { resourceId: resourceId ?? '' }, transaction })) as [unknown, unknown];
      if (!resourceId) {
        await db.query('INSERT INTO search_signal_sync (id, synced_at) VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET synced_at = EXCLUDED.synced_at', { transaction });
      }
      return typeof count === 'number' ? count : Number((count as { rowCount?: number })?.rowCount ?? 0);
    },

    async markBehind() {
      await db.query('UPDATE search_index_state SET unindexed_since = now(), updated_at = now() WHERE id = 1 AND unindexed_since IS NULL');
    },

    async recordLag() {
      await db.transaction((transaction) => recordLagIn(transaction));
    },

    async counts() {
      const [row] = await select<{ resources: string; sellers: string; lag: number | null }>(
        `SELECT (SELECT count(*) FROM search_documents d WHERE d.discoverable) AS resources,
                (SELECT count(DISTINCT seller_id) FROM search_documents d WHERE d.discoverable) AS sellers,
                (SELECT EXTRACT(EPOCH FROM now() - min(created_at))::float8 FROM catalog_events WHERE indexed_at IS NULL) AS lag`,
        {},
      );
      const volume = await select<{ network: string; asset: string; amount: string }>(
        `SELECT network, asset_code AS asset, sum(amount)::text AS amount FROM settlements WHERE status = 'settled' GROUP BY network, asset_code`,
        {},
      );
      return {
        resources: Number(row.resources),
        activeSellers: Number(row.sellers),
        lagSeconds: Math.max(0, Number(row.lag ?? 0)),
        volume: volume.map((v) => ({ network: v.network, asset: v.asset, amount: Number(v.amount) })),
      };
    },
  };
  return repo;
}
