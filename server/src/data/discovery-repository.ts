import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import { CatalogEventModel, ResourceModel, ResourceVersionModel } from './models';
import { normalizeAmount } from '../domain/amount';
import { pgQuery } from './pg-query';
import { toSeller } from './seller-repository';
import type { DiscoveryFilters, DiscoveryItem, DiscoveryRepository, RankedItem, SearchOptions } from '../domain/discovery/types';


type Row = Record<string, unknown>;

const ITEM_COLUMNS = `d.resource_id AS id, d.seller_id AS "sellerId", d.type, d.name, d.description, d.url,
  d.route_template AS "routeTemplate", d.network, d.pay_to AS "payTo", d.asset_code AS "assetCode",
  d.asset_issuer AS "assetIssuer", d.amount::text AS amount, d.status`;

const toRanked = (row: Row): RankedItem => ({ ...toItem(row), score: String(row.scoreText), signalsFresh: Boolean(row.signalsFresh) });

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

/** filterSql with positional parameters (appended to `values`), for the search statements run through pgQuery. */
function filterPositional(filters: DiscoveryFilters, values: unknown[]): string {
  const where = ['d.discoverable'];
  const add = (sql: (n: number) => string, v: unknown) => (values.push(v), where.push(sql(values.length)));
  if (filters.network) add((n) => `d.network = $${n}`, filters.network);
  if (filters.asset) add((n) => `d.asset_code = $${n}`, filters.asset);
  if (filters.type) add((n) => `d.type = $${n}`, filters.type);
  if (filters.sellerId) add((n) => `d.seller_id = $${n}`, filters.sellerId);
  if (filters.minPrice) add((n) => `d.amount >= CAST($${n} AS numeric)`, filters.minPrice);
  if (filters.maxPrice) add((n) => `d.amount <= CAST($${n} AS numeric)`, filters.maxPrice);
  if (filters.extension) add((n) => `$${n} = ANY (d.extension_names)`, filters.extension);
  return where.join(' AND ');
}

/**
 * A static-score tier (migration 0010): the documents whose fine bucket floor(static_score * 200) is at least
 * `bucket`; `size` is how many documents the tier was built to hold (at least that many are in it).
 */
export interface ScoreTier {
  bucket: number;
  size: number;
}

/**
 * The tsquery naming one tier: the cumulative coarse lexeme of the first coarse step at or above the bucket, or'ed
 * with the fine lexemes between. At most ten index entries (migration 0010).
 */
export function tierQuery(bucket: number): string {
  const coarse = Math.ceil(bucket / 10);
  const entries: string[] = [];
  for (let f = bucket; f < Math.min(10 * coarse, 101); f++) entries.push(`'#f${f}'`);
  if (coarse <= 10) entries.push(`'#c${coarse}'`);
  return entries.join(' | ');
}

/** Tier sizes tried, smallest first: 1,000 × 8^k documents, while below half the index. */
const TIER_BASE = 1000;
const TIER_GROWTH = 8;
/** Tier boundaries are recomputed at most this often per process (they only steer the work, never the answer). */
const TIER_REFRESH_MS = 60_000;

/**
 * The candidate step restricted to one tier, or not restricted ($tier NULL): the best `candidates` matches by
 * (static_score, id). The tiers are nested by static score (every document outside a tier scores below every
 * document inside it, migration 0010), so when the restricted step finds at least `candidates` matches they are
 * exactly the unrestricted step's; the caller checks `n` (the size of the candidate set, on every row) and otherwise
 * tries a larger tier or none. Filters are applied in both. Only then is text relevance computed, for the candidates.
 */
function searchSql(where: string, tiered: boolean, paged: boolean, p: { limit: number; candidates: number; maxAge: number; wText: number; tier: number; afterScore: number; afterId: number }): string {
  // Every candidate step is read through a GIN index (`+ 0` keeps the planner from walking search_documents_static_idx
  // instead). A walk stops after `candidates` matches only if matches are spread evenly over the static order; when a
  // query's matches score low (or a tier holds fewer matches than the bound) it reads most of the index: at 1M,
  // "weather forecast" walked 207k buffers in 2.0 s where the bitmap reads its 13.6k matches (EXPLAIN, PROFILE.md).
  // The bitmap's cost is bounded by the query's matches; broad queries are answered by a tier before this step.
  const match = tiered
    ? `search_rank_document(d.document, d.static_score) @@ (websearch_to_tsquery('english', $1) && CAST($${p.tier} AS tsquery))`
    : `d.document @@ websearch_to_tsquery('english', $1)`;
  return `WITH query AS (SELECT websearch_to_tsquery('english', $1) AS tsq),
     candidates AS MATERIALIZED (
       SELECT d.resource_id, d.static_score FROM search_documents d
        WHERE ${match} AND ${where}
        ORDER BY d.static_score + 0 DESC, d.resource_id DESC
        LIMIT $${p.candidates}
     ),
     counted AS (SELECT count(*) AS n FROM candidates),
     scored AS (
       SELECT ${ITEM_COLUMNS},
         d.signals_refreshed_at IS NOT NULL
           AND GREATEST(d.signals_refreshed_at, (SELECT synced_at FROM search_signal_sync WHERE id = 1)) > now() - make_interval(secs => $${p.maxAge}) AS "signalsFresh",
         CAST(CAST($${p.wText} AS float8) * ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', d.document, query.tsq, 32) + c.static_score AS float8) AS score
       FROM candidates c JOIN search_documents d ON d.resource_id = c.resource_id, query
       ${tiered ? `WHERE (SELECT n FROM counted) >= $${p.candidates}` : ''}
     )
     SELECT scored.*, scored.score::text AS "scoreText", counted.n FROM scored, counted
      ${paged ? `WHERE (scored.score, scored.id) < (CAST($${p.afterScore} AS float8), $${p.afterId})` : ''}
      ORDER BY scored.score DESC, scored.id DESC LIMIT $${p.limit}`;
}


/**
 * The tiers of this process: the fine bucket of the 1,000th, 8,000th, ... best document by static score (a short
 * walk of search_documents_static_idx), recomputed in the background at most once a minute. Stale boundaries cost
 * only speed (a tier holds more or fewer documents than planned), never correctness.
 */
function createTierCache(db: Sequelize, sizesFor: (total: number) => number[]) {
  let tiers: ScoreTier[] = [];
  let total = 0;
  let at = 0;
  let refreshing: Promise<void> | null = null;
  const refresh = async () => {
    const [{ total: n }] = (await pgQuery<{ total: number }>(db, `SELECT GREATEST(reltuples, 0)::float8 AS total FROM pg_class WHERE oid = 'search_documents'::regclass`, [], 'search_tier_total')).rows;
    const sizes = sizesFor(n);
    let next: ScoreTier[] = [];
    if (sizes.length) {
      const { rows } = await pgQuery<{ bucket: number | null }>(
        db,
        `SELECT GREATEST(0, LEAST(100, CAST(floor(s.static_score * 200) AS integer))) AS bucket
           FROM unnest(CAST($1 AS int[])) WITH ORDINALITY AS o(k, i)
           LEFT JOIN LATERAL (SELECT static_score FROM search_documents WHERE discoverable
                                ORDER BY static_score DESC, resource_id DESC OFFSET o.k - 1 LIMIT 1) s ON true
          ORDER BY o.i`,
        [sizes],
      );
      // One tier per bucket (the largest size that reached it); bucket 0 is every document.
      for (const [i, r] of rows.entries()) {
        if (r.bucket === null || r.bucket <= 0) continue;
        const same = next.find((t) => t.bucket === r.bucket);
        if (same) same.size = sizes[i];
        else next.push({ bucket: r.bucket, size: sizes[i] });
      }
    }
    tiers = next;
    total = n;
    at = Date.now();
  };
  return {
    async get(): Promise<ScoreTier[]> {
      if (Date.now() - at > TIER_REFRESH_MS && !refreshing) {
        refreshing = refresh().finally(() => (refreshing = null));
        // The first search of the process waits for the boundaries; later ones use the previous ones meanwhile.
        if (at === 0) await refreshing.catch(() => undefined);
        else refreshing.catch(() => undefined);
      }
      return tiers;
    },
    total: () => Math.max(1, total),
  };
}

export interface DiscoveryRepositoryOptions {
  /** Tier sizes for an index of `total` documents (default: 1,000 × 8^k below half of it; none under 2,000). */
  tierSizes?: (total: number) => number[];
  /** Try every tier whatever the match estimate (tests: the cascade itself). */
  tryEveryTier?: boolean;
}

const defaultTierSizes = (total: number) => {
  const sizes: number[] = [];
  for (let s = TIER_BASE; s < total / 2; s *= TIER_GROWTH) sizes.push(s);
  return sizes;
};

export function createDiscoveryRepository(db: Sequelize, opts: DiscoveryRepositoryOptions = {}): DiscoveryRepository {
  const select = <T extends object>(sql: string, replacements: Record<string, unknown>, transaction?: Transaction) =>
    db.query<T>(sql, { replacements, type: QueryTypes.SELECT, transaction });
  const tierCache = createTierCache(db, opts.tierSizes ?? defaultTierSizes);

  /** The planner's estimate of the documents the text query and filters match (GIN statistics; no execution). */
  const estimateMatches = async (where: string, values: unknown[]): Promise<number> => {
    const { rows } = await pgQuery<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
      db,
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM search_documents d WHERE d.document @@ websearch_to_tsquery('english', $1) AND ${where}`,
      values,
    );
    return Number(rows[0]?.['QUERY PLAN']?.[0]?.Plan?.['Plan Rows'] ?? 0);
  };

  /** One candidate step + scoring + page (unnamed statement: planned for these values, never a generic plan). */
  const runSearch = async (where: string, base: unknown[], after: { score: string; id: string } | null, limit: number, options: SearchOptions, tier: string | null) => {
    const values = [...base];
    const at = (v: unknown) => (values.push(v), values.length);
    const p = { limit: at(limit), candidates: at(options.candidates), maxAge: at(options.signalsMaxAgeSeconds), wText: at(options.textWeight), tier: tier === null ? 0 : at(tier), afterScore: 0, afterId: 0 };
    if (after) (p.afterScore = at(after.score)), (p.afterId = at(after.id));
    return (await pgQuery<Row>(db, searchSql(where, tier !== null, after !== null, p), values)).rows;
  };

  return {
    async list(filters, afterId, limit) {
      const replacements: Record<string, unknown> = { limit };
      let where = filterSql(filters, replacements);
      if (afterId) (where += ' AND d.resource_id < :afterId'), (replacements.afterId = afterId);
      const rows = await select<Row>(`SELECT ${ITEM_COLUMNS} FROM search_documents d WHERE ${where} ORDER BY d.resource_id DESC LIMIT :limit`, replacements);
      return rows.map(toItem);
    },

    async search(q, filters, after, limit, options) {
      const values: unknown[] = [q];
      const where = filterPositional(filters, values);
      const tiers = await tierCache.get();
      // Which tiers are worth trying: the planner's estimate of the matches (its GIN statistics), scaled to a tier's
      // share of the index, should fill the candidate bound with a margin; a query too narrow for every tier goes
      // straight to the unrestricted step, which then reads few rows anyway. The estimate only picks the order of
      // work: every answer is the exact candidate set (see TIERED_CANDIDATES_SQL).
      let useful: ScoreTier[] = [];
      if (tiers.length && opts.tryEveryTier) useful = tiers;
      else if (tiers.length) {
        const estimate = await estimateMatches(where, values);
        useful = tiers.filter((t) => (estimate * t.size) / tierCache.total() >= 1.5 * options.candidates);
      }
      for (const tier of useful) {
        const rows = await runSearch(where, values, after, limit, options, tierQuery(tier.bucket));
        if (rows.length > 0 && Number(rows[0].n) >= options.candidates) return rows.map(toRanked);
      }
      return (await runSearch(where, values, after, limit, options, null)).map(toRanked);
    },

    async indexLag() {
      const {
        rows: [row],
      } = await pgQuery<{ since: Date | null; lag: number | null }>(
        db,
        'SELECT unindexed_since AS since, EXTRACT(EPOCH FROM now() - unindexed_since)::float8 AS lag FROM search_index_state WHERE id = 1',
        [],
        'search_index_lag',
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

    async catalogFacts(sellerId, payTo) {
      const {
        rows: [row],
      } = await pgQuery<Row>(
        db,
        `SELECT s.id, s.display_name AS "displayName", s.wallet_address AS "walletAddress", s.domain, s.domain_verified_at AS "domainVerifiedAt",
                s.created_at AS "createdAt", s.updated_at AS "updatedAt",
                (SELECT o.id FROM sellers o WHERE o.wallet_address = $2) AS "payToOwner",
                EXISTS (SELECT 1 FROM sellers x WHERE x.domain = s.domain AND x.id <> s.id AND x.domain_verified_at IS NOT NULL) AS "domainVerifiedByOther"
           FROM sellers s WHERE s.id = $1`,
        [sellerId, payTo],
        'catalog_facts',
      );
      if (!row) return { seller: null, payToOwner: null, domainVerifiedByOther: false };
      return { seller: toSeller(row), payToOwner: (row.payToOwner as string | null) ?? null, domainVerifiedByOther: Boolean(row.domainVerifiedByOther) };
    },

    async catalog(write) {
      if (write.mode === 'create' && !write.mcpTool && write.version) {
        // A new HTTP resource: resource, first version, catalog event, the index-behind mark and the declaration in
        // one statement (atomic on its own; the foreign keys between them are checked at its end). No lock to take:
        // the MCP tool re-check below is the only one and applies to MCP resources.
        const r = write.resource;
        const v = write.version;
        await pgQuery(
          db,
          `WITH r AS (
             INSERT INTO resources (id, seller_id, current_version_id, version, type, name, description, url, route_template, network,
                                    pay_to, asset_code, asset_issuer, amount, input_schema, output_schema, extensions, status, deleted_at,
                                    created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, CAST($14 AS numeric), CAST($15 AS jsonb), CAST($16 AS jsonb),
                     CAST($17 AS jsonb), $18, NULL, $19, $20)
             RETURNING id),
           v AS (
             INSERT INTO resource_versions (id, resource_id, version, name, description, url, route_template, network, pay_to, asset_code,
                                            asset_issuer, amount, input_schema, output_schema, extensions, seller_domain, created_at)
             SELECT $3, r.id, $4, $21, $22, $23, $24, $25, $26, $27, $28, CAST($29 AS numeric), CAST($30 AS jsonb), CAST($31 AS jsonb),
                    CAST($32 AS jsonb), $33, $34 FROM r),
           e AS (
             INSERT INTO catalog_events (id, resource_id, version_id, seller_id, kind, created_at)
             SELECT $35, r.id, $36, $2, 'cataloged', now() FROM r),
           behind AS (
             UPDATE search_index_state SET unindexed_since = now(), updated_at = now() WHERE id = 1 AND unindexed_since IS NULL),
           d AS (
             INSERT INTO catalog_declarations (resource_id, seller_id, declared_pay_to, trusted, declared_at)
             SELECT r.id, $2, $37, $38, now() FROM r
             ON CONFLICT (resource_id) DO UPDATE SET declared_pay_to = EXCLUDED.declared_pay_to, trusted = EXCLUDED.trusted, declared_at = now())
           SELECT count(*) AS n FROM r`,
          [
            r.id, r.sellerId, r.versionId, r.version, r.type, r.name, r.description, r.url, r.routeTemplate, r.network,
            r.payTo, r.assetCode, r.assetIssuer, r.amount, JSON.stringify(r.inputSchema), JSON.stringify(r.outputSchema), JSON.stringify(r.extensions ?? {}), r.status, r.createdAt, r.updatedAt,
            v.name, v.description, v.url, v.routeTemplate, v.network, v.payTo, v.assetCode, v.assetIssuer, v.amount,
            JSON.stringify(v.inputSchema), JSON.stringify(v.outputSchema), JSON.stringify(v.extensions ?? {}), v.sellerDomain, v.createdAt,
            write.event.id, write.event.versionId, write.declaration.payTo, write.declaration.trusted,
          ],
          'catalog_create_http',
        );
        return { status: 'ok' as const };
      }
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
