import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import { CatalogEventModel, ResourceModel, ResourceVersionModel } from './models';
import { normalizeAmount } from '../domain/amount';
import { pgQuery } from './pg-query';
import { toSeller } from './seller-repository';
import type { DiscoveryFilters, DiscoveryItem, DiscoveryRepository, RankedItem, SearchAfter, SearchOptions } from '../domain/discovery/types';
import { PROVEN_HOST_TIER } from '../domain/discovery/ranking';
import { parseQuery, planSearch, synonymWords, type ParsedQuery, type ResolvedQuery, type ResolvedWord } from '../domain/discovery/query';


type Row = Record<string, unknown>;

const ITEM_COLUMNS = `d.resource_id AS id, d.seller_id AS "sellerId", d.type, d.name, d.description, d.url,
  d.route_template AS "routeTemplate", d.network, d.pay_to AS "payTo", d.asset_code AS "assetCode",
  d.asset_issuer AS "assetIssuer", d.amount::text AS amount, d.status, d.host_verified AS "hostVerified"`;

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
    hostVerified: Boolean(row.hostVerified),
  };
}

/**
 * WHERE clauses of the shared filters, over search_documents aliased `d`. Prices compare as NUMERIC. The index holds
 * only active resources (the indexing worker removes a deleted or disabled resource's document), so no probe into
 * `resources` per row. A document whose host another seller has since proven (`host_claimed`, refreshed with the
 * signals; migration 0050) is never served, even before its next indexing rejects it.
 */
function filterSql(filters: DiscoveryFilters, replacements: Record<string, unknown>): string {
  const where = ['d.discoverable', 'NOT d.host_claimed'];
  if (filters.network) (where.push('d.network = :network'), (replacements.network = filters.network));
  if (filters.asset) (where.push('d.asset_code = :asset'), (replacements.asset = filters.asset));
  if (filters.type) (where.push('d.type = :type'), (replacements.type = filters.type));
  if (filters.sellerId) (where.push('d.seller_id = :sellerId'), (replacements.sellerId = filters.sellerId));
  if (filters.minPrice) (where.push('d.amount >= CAST(:minPrice AS numeric)'), (replacements.minPrice = filters.minPrice));
  if (filters.maxPrice) (where.push('d.amount <= CAST(:maxPrice AS numeric)'), (replacements.maxPrice = filters.maxPrice));
  if (filters.extension) (where.push(':extension = ANY (d.extension_names)'), (replacements.extension = filters.extension));
  where.push(...trustConditions(filters));
  if (filters.minUptime !== undefined) (where.push('d.uptime >= :minUptime'), (replacements.minUptime = filters.minUptime));
  return where.join(' AND ');
}

/**
 * Issue #33: a listing dead for longer than the configured time is dropped from every result (GET /v1/resources/{id}
 * still reads it; it comes back when it answers again); liveOnly and verifiedOnly are their own conditions.
 */
function trustConditions(filters: DiscoveryFilters): string[] {
  const where = ['NOT d.liveness_dropped'];
  if (filters.liveOnly) where.push('d.live IS TRUE');
  if (filters.verifiedOnly) where.push('d.owner_verified IS TRUE AND d.host_verified');
  return where;
}

/** filterSql with positional parameters (appended to `values`), for the search statements run through pgQuery. */
function filterPositional(filters: DiscoveryFilters, values: unknown[]): string {
  const where = ['d.discoverable', 'NOT d.host_claimed'];
  const add = (sql: (n: number) => string, v: unknown) => (values.push(v), where.push(sql(values.length)));
  if (filters.network) add((n) => `d.network = $${n}`, filters.network);
  if (filters.asset) add((n) => `d.asset_code = $${n}`, filters.asset);
  if (filters.type) add((n) => `d.type = $${n}`, filters.type);
  if (filters.sellerId) add((n) => `d.seller_id = $${n}`, filters.sellerId);
  if (filters.minPrice) add((n) => `d.amount >= CAST($${n} AS numeric)`, filters.minPrice);
  if (filters.maxPrice) add((n) => `d.amount <= CAST($${n} AS numeric)`, filters.maxPrice);
  if (filters.extension) add((n) => `$${n} = ANY (d.extension_names)`, filters.extension);
  where.push(...trustConditions(filters));
  if (filters.minUptime !== undefined) add((n) => `d.uptime >= CAST($${n} AS float8)`, filters.minUptime);
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

/** How many documents the matches of the rare concepts may hold (by document frequency) to be read in full. */
export const RARE_BUDGET = 1000;
/** The most rare-concept matches read (the vocabulary's counts may lag the index). */
const RARE_CAP = 1500;
/** Weight of the name's trigram similarity to the whole query, and of usage (payers weighted by what they paid at the cataloged price, 30 days). */
const NAME_SIMILARITY_WEIGHT = 0.1;
const USAGE_WEIGHT = 0.05;

/** One search's statement inputs (see buildPlan). */
interface SearchPlan {
  /** OR of the rare concepts (every match is a candidate), with the required phrases and exclusions; or null. */
  rare: string | null;
  /** The common concepts (AND, or OR in the fallback), with the requirements: its best matches by static score. */
  common: string | null;
  /** Per concept: the match query, the same restricted to fields A/B/C/D, and its IDF weight. */
  concepts: { q: string[]; a: string[]; b: string[]; c: string[]; d: string[]; idf: number[] };
  idfSum: number;
  /** The query text in lower case, for the name's trigram similarity. */
  text: string;
}

/**
 * The search statement: candidates, then the full score for them only, then one keyset page.
 *
 * Candidates are (1) every match of the rare concepts (their matches hold at most RARE_BUDGET documents by the
 * vocabulary's counts: the words that say what the query is about) and (2) the best `candidates` matches by static
 * score of the common concepts (AND; OR when AND finds nothing), restricted to a static-score tier or not, as
 * before (migration 0010: a tier that yields `candidates` matches yields exactly the unrestricted step's). Each
 * candidate's text relevance is the IDF-weighted share of the query's concepts it matches, each counted by its best
 * field (name 1.0, tags/tool name 0.7, description 0.45, URL/schema 0.2; matched across fields 0.3); the score adds
 * the name's trigram similarity to the query, the static score and usage.
 */
function searchSql(where: string, plan: SearchPlan, tiered: boolean, paged: boolean, p: Record<string, number>): string {
  const cte: string[] = [];
  if (plan.rare !== null) {
    cte.push(`rare AS MATERIALIZED (
       SELECT d.resource_id FROM search_documents d WHERE d.document @@ CAST($${p.rare} AS tsquery) AND ${where}
        ORDER BY d.static_score + 0 DESC, d.resource_id DESC LIMIT ${RARE_CAP})`);
  }
  if (plan.common !== null) {
    // Every candidate step is read through a GIN index (`+ 0` keeps the planner from walking
    // search_documents_static_idx, PROFILE.md "Search and catalog (session 3)").
    const match = tiered
      ? `search_rank_document(d.document, d.static_score) @@ (CAST($${p.common} AS tsquery) && CAST($${p.tier} AS tsquery))`
      : `d.document @@ CAST($${p.common} AS tsquery)`;
    cte.push(`common AS MATERIALIZED (
       SELECT d.resource_id FROM search_documents d WHERE ${match} AND ${where}
        ORDER BY d.static_score + 0 DESC, d.resource_id DESC LIMIT $${p.candidates})`);
  }
  const counted = plan.common !== null ? '(SELECT count(*) FROM common)' : '0';
  const union = [plan.rare !== null ? 'SELECT resource_id FROM rare' : null, plan.common !== null ? 'SELECT resource_id FROM common' : null].filter(Boolean).join(' UNION ');
  return `WITH ${cte.join(',\n')},
     counted AS (SELECT ${counted} AS n),
     cand AS (${union}),
     concepts AS (
       SELECT * FROM unnest(CAST($${p.cq} AS tsquery[]), CAST($${p.ca} AS tsquery[]), CAST($${p.cb} AS tsquery[]), CAST($${p.cc} AS tsquery[]),
                            CAST($${p.cd} AS tsquery[]), CAST($${p.idf} AS float8[])) AS k(q, qa, qb, qc, qd, idf)),
     scored AS (
       SELECT ${ITEM_COLUMNS},
         d.signals_refreshed_at IS NOT NULL
           AND GREATEST(d.signals_refreshed_at, (SELECT synced_at FROM search_signal_sync WHERE id = 1)) > now() - make_interval(secs => $${p.maxAge}) AS "signalsFresh",
         CAST(CAST($${p.wText} AS float8) * (SELECT COALESCE(sum(k.idf * CASE WHEN NOT d.document @@ k.q THEN 0.0 WHEN d.document @@ k.qa THEN 1.0
                     WHEN d.document @@ k.qb THEN 0.7 WHEN d.document @@ k.qc THEN 0.45 WHEN d.document @@ k.qd THEN 0.2 ELSE 0.3 END), 0)
                FROM concepts k) / CAST($${p.idfSum} AS float8)
           + ${NAME_SIMILARITY_WEIGHT} * similarity(lower(d.name), $${p.text})
           + d.static_score
           + ${USAGE_WEIGHT} * LEAST(1.0, ln(1 + d.paid_payers) / ln(101))
           + CASE WHEN d.host_verified THEN ${PROVEN_HOST_TIER} ELSE 0.0 END AS float8) AS score
       FROM cand c JOIN search_documents d ON d.resource_id = c.resource_id
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

  /** The planner's estimate of the documents a tsquery and the filters match (GIN statistics; no execution). */
  const estimateMatches = async (where: string, values: unknown[]): Promise<number> => {
    const { rows } = await pgQuery<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
      db,
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM search_documents d WHERE d.document @@ CAST($1 AS tsquery) AND ${where}`,
      values,
    );
    return Number(rows[0]?.['QUERY PLAN']?.[0]?.Plan?.['Plan Rows'] ?? 0);
  };

  /**
   * What the index knows about the query's words, in one statement: each word's lexeme and document count, the
   * prefix count for the last word (a range scan of search_vocabulary_prefix, text_pattern_ops; at most 2,000 words), the most similar indexed lexemes for a query word the vocabulary does not know
   * (pg_trgm similarity >= 0.4 on lexemes of 4+ characters); the required phrases and exclusions as tsquery text and
   * the index size.
   */
  const resolveWords = async (parsed: ParsedQuery): Promise<ResolvedQuery> => {
    const syn = synonymWords(parsed);
    const all = [...parsed.words, ...syn];
    const fix = [...parsed.words.map(() => true), ...syn.map(() => false)];
    const prefix = all.map((_, i) => parsed.lastIsPrefix && i === parsed.words.length - 1);
    const { rows } = await pgQuery<{ i: string; lexeme: string | null; ndoc: number; prefixNdoc: string | null; fixes: Array<{ lexeme: string; ndoc: number }> | null; phrases: string[]; excluded: string[]; total: number }>(
      db,
      `WITH w AS (
         SELECT t.i, t.fix, t.prefix, (SELECT min(l.lexeme) FROM unnest(to_tsvector('english', t.w)) l) AS lexeme
           FROM unnest(CAST($1 AS text[]), CAST($2 AS boolean[]), CAST($3 AS boolean[])) WITH ORDINALITY AS t(w, fix, prefix, i))
       SELECT w.i, w.lexeme, COALESCE(v.ndoc, 0) AS ndoc,
              CASE WHEN w.prefix THEN (SELECT sum(p.ndoc) FROM (SELECT p.ndoc FROM search_vocabulary p
                 WHERE p.word ~>=~ w.lexeme AND p.word ~<~ (w.lexeme || chr(1114111)) LIMIT 2000) p) END AS "prefixNdoc",
              CASE WHEN w.fix AND v.word IS NULL AND length(w.lexeme) >= 4 AND w.lexeme ~ '^[[:alpha:]]+$' THEN
                (SELECT json_agg(json_build_object('lexeme', f.word, 'ndoc', f.ndoc)) FROM (
                   SELECT s.word, s.ndoc FROM search_vocabulary s
                    WHERE s.word % w.lexeme AND similarity(s.word, w.lexeme) >= 0.4 AND s.ndoc > 0
                    ORDER BY similarity(s.word, w.lexeme) DESC, s.ndoc DESC, s.word LIMIT 2) f) END AS fixes,
              x.phrases, x.excluded, x.total
         FROM w LEFT JOIN search_vocabulary v ON v.word = w.lexeme
        CROSS JOIN (SELECT
           ARRAY(SELECT CAST(phraseto_tsquery('english', p) AS text) FROM unnest(CAST($4 AS text[])) WITH ORDINALITY AS t(p, i) ORDER BY i) AS phrases,
           ARRAY(SELECT CAST(phraseto_tsquery('english', p) AS text) FROM unnest(CAST($5 AS text[])) WITH ORDINALITY AS t(p, i) ORDER BY i) AS excluded,
           (SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = 'search_documents'::regclass) AS total) x
        ORDER BY w.i`,
      [all, fix, prefix, parsed.phrases.map((p) => p.join(' ')), parsed.excluded.map((p) => p.join(' '))],
    );
    const toWord = (r: (typeof rows)[number]): ResolvedWord => ({ lexeme: r.lexeme, ndoc: Number(r.ndoc), prefixNdoc: Number(r.prefixNdoc ?? 0), fixes: r.fixes ?? [] });
    const words = rows.slice(0, parsed.words.length).map(toWord);
    const synonyms = new Map(syn.map((w, i) => [w, toWord(rows[parsed.words.length + i])]));
    const extra = rows[0];
    return { words, synonyms, phrases: extra.phrases, excluded: extra.excluded, total: Number(extra.total) };
  };

  /** The tier cascade of the common step (unchanged semantics: the exact candidate set, read from the smallest tier that fills it). */
  const searchWithTiers = async (where: string, values: unknown[], plan: SearchPlan, after: SearchAfter | null, limit: number, options: SearchOptions): Promise<Row[]> => {
    const tiers = plan.common !== null ? await tierCache.get() : [];
    let useful: ScoreTier[] = [];
    if (tiers.length && opts.tryEveryTier) useful = tiers;
    else if (tiers.length) {
      const estimate = await estimateMatches(where.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + 1}`), [plan.common, ...values]);
      useful = tiers.filter((t) => (estimate * t.size) / tierCache.total() >= 1.5 * options.candidates);
    }
    for (const tier of useful) {
      const rows = await runSearch(where, values, plan, after, limit, options, tierQuery(tier.bucket));
      if (rows.length > 0 && Number(rows[0].n) >= options.candidates) return rows;
    }
    return runSearch(where, values, plan, after, limit, options, null);
  };

  /** One candidate step + scoring + page (unnamed statement: planned for these values, never a generic plan). */
  const runSearch = async (where: string, base: unknown[], plan: SearchPlan, after: SearchAfter | null, limit: number, options: SearchOptions, tier: string | null) => {
    const values = [...base];
    const at = (v: unknown) => (values.push(v), values.length);
    const p: Record<string, number> = {
      limit: at(limit), maxAge: at(options.signalsMaxAgeSeconds), wText: at(options.textWeight),
      cq: at(plan.concepts.q), ca: at(plan.concepts.a), cb: at(plan.concepts.b), cc: at(plan.concepts.c), cd: at(plan.concepts.d),
      idf: at(plan.concepts.idf), idfSum: at(plan.idfSum), text: at(plan.text),
    };
    if (plan.rare !== null) p.rare = at(plan.rare);
    if (plan.common !== null) (p.common = at(plan.common)), (p.candidates = at(options.candidates));
    if (tier !== null) p.tier = at(tier);
    if (after) (p.afterScore = at(after.score)), (p.afterId = at(after.id));
    return (await pgQuery<Row>(db, searchSql(where, plan, tier !== null, after !== null, p), values)).rows;
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
      const parsed = parseQuery(q);
      if (parsed.words.length === 0) return [];
      const planText = planSearch(parsed, await resolveWords(parsed), options.rareBudget ?? RARE_BUDGET);
      if (!planText) return [];
      const values: unknown[] = [];
      const where = filterPositional(filters, values);
      // The common concepts are AND'ed; when that finds nothing at all (first page) the query falls back to OR, and
      // its cursor says so, so later pages continue in the same mode.
      const modes: Array<'and' | 'or'> = after?.mode === 'or' ? ['or'] : after === null && planText.commonOr !== null ? ['and', 'or'] : ['and'];
      for (const mode of modes) {
        const plan: SearchPlan = { rare: planText.rare, common: mode === 'or' ? planText.commonOr : planText.common, concepts: planText.concepts, idfSum: planText.idfSum, text: parsed.words.join(' ') };
        const rows = await searchWithTiers(where, values, plan, after, limit, options);
        if (rows.length > 0 || mode === 'or') return rows.map((r) => ({ ...toRanked(r), mode }));
      }
      return [];
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

    async catalogFacts(sellerId, payTo, url) {
      const {
        rows: [row],
      } = await pgQuery<Row>(
        db,
        `SELECT s.id, s.display_name AS "displayName", s.wallet_address AS "walletAddress", s.domain, s.domain_verified_at AS "domainVerifiedAt",
                s.created_at AS "createdAt", s.updated_at AS "updatedAt",
                (SELECT o.id FROM sellers o WHERE o.wallet_address = $2) AS "payToOwner",
                EXISTS (SELECT 1 FROM sellers x WHERE x.domain = s.domain AND x.id <> s.id AND x.domain_verified_at IS NOT NULL) AS "domainVerifiedByOther",
                host_owner(url_host($3)) AS "hostOwner"
           FROM sellers s WHERE s.id = $1`,
        [sellerId, payTo, url],
        'catalog_facts',
      );
      if (!row) return { seller: null, payToOwner: null, domainVerifiedByOther: false, hostOwner: null };
      return { seller: toSeller(row), payToOwner: (row.payToOwner as string | null) ?? null, domainVerifiedByOther: Boolean(row.domainVerifiedByOther), hostOwner: (row.hostOwner as string | null) ?? null };
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
