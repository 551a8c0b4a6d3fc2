import crypto from 'node:crypto';
import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { toListingItem } from './listing-rows';
import { amountColumn } from './amount-column';
import { toTrust, TRUST_COLUMNS } from './trust-repository';
import type {
  DiscoveryFilters,
  DiscoverySearchRepository,
  RankedItem,
  SearchAfter,
  SearchAnswer,
} from '../domain/discovery/types';
import { FIELD_WEIGHTS, RANKING_WEIGHTS } from '../domain/discovery/ranking';
import {
  parseQuery,
  planImpact,
  PREFIX_READS,
  synonymWords,
  type ImpactPlan,
  type ParsedQuery,
  type ResolvedQuery,
  type ResolvedWord,
} from '../domain/discovery/query';

/**
 * Search: planning (what the index knows about the query's words) and scoring (the search statement), and the
 * listing. Every statement is positional SQL through pgQuery. Catalog writes are data/catalog-write-repository.ts;
 * the index itself (documents, postings, scores) is written by data/search-index-repository.ts.
 */

type Row = Record<string, unknown>;

const ITEM_COLUMNS = `d.resource_id AS id, d.seller_id AS "sellerId", d.type, d.name, d.description, d.url,
  d.route_template AS "routeTemplate", d.network, d.pay_to AS "payTo", d.asset_code AS "assetCode",
  d.asset_issuer AS "assetIssuer", d.amount::text AS amount, d.status, d.host_verified AS "hostVerified"`;

// Added to the new item, not spread into another literal (see toListingItem).
const toRanked = (row: Row): RankedItem =>
  Object.assign(toListingItem(row), {
    score: String(row.scoreText),
    signalsFresh: Boolean(row.signalsFresh),
    trust: toTrust(row),
  });

/**
 * The shared filters over search_documents aliased `d`, positional parameters appended to `values`. Prices compare
 * as NUMERIC. The index holds only active resources (the indexing worker removes a deleted or disabled resource's
 * document), so no probe into `resources` per row. A document whose host another seller has since proven
 * (`host_claimed`, refreshed with the signals; migration 0050) is never served, even before its next indexing
 * rejects it. `user` says whether any filter of the request applies (beyond those two). `postings`: the same filters
 * over search_postings aliased `p` (same parameters) when the postings carry every one of them (network, asset, type,
 * price: migration 0132), else null (a filter only the document has).
 */
function filterSql(
  filters: DiscoveryFilters,
  values: unknown[],
): { where: string; user: boolean; postings: string[] | null } {
  const where = ['d.discoverable', 'NOT d.host_claimed'];
  const postings: string[] = [];
  const add = (sql: (n: number) => string, v: unknown) => (values.push(v), where.push(sql(values.length)));
  const carried = (sql: (a: string, n: number) => string, v: unknown) => {
    add((n) => sql('d', n), v);
    postings.push(sql('p', values.length));
  };
  if (filters.network) carried((a, n) => `${a}.network = $${n}`, filters.network);
  if (filters.asset) carried((a, n) => `${a}.asset_code = $${n}`, filters.asset);
  if (filters.type) carried((a, n) => `${a}.type = $${n}`, filters.type);
  if (filters.sellerId) add((n) => `d.seller_id = $${n}`, filters.sellerId);
  if (filters.minPrice !== undefined)
    carried((a, n) => `${a}.amount >= CAST($${n} AS numeric)`, amountColumn(filters.minPrice));
  if (filters.maxPrice !== undefined)
    carried((a, n) => `${a}.amount <= CAST($${n} AS numeric)`, amountColumn(filters.maxPrice));
  if (filters.extension) add((n) => `$${n} = ANY (d.extension_names)`, filters.extension);
  const base = where.length;
  // Issue #33: a listing dead longer than the configured time is dropped from every result; the trust filters.
  where.push('NOT d.liveness_dropped');
  if (filters.liveOnly) where.push('d.live IS TRUE');
  if (filters.verifiedOnly) where.push('d.owner_verified IS TRUE AND d.host_verified');
  if (filters.minUptime !== undefined) add((n) => `d.uptime >= CAST($${n} AS float8)`, filters.minUptime);
  // Every filter of the request beyond the three that always apply is carried by the postings, or the read joins.
  const onlyCarried = where.length - 3 === postings.length;
  return {
    where: where.join(' AND '),
    user: base > 2 || where.length > base + 1,
    postings: onlyCarried ? postings : null,
  };
}

/** The most postings read for one term of a rare concept (the vocabulary's counts may lag the index). */
export const RARE_CAP = 1500;
/** How many documents the matches of the rare concepts may hold (by document frequency) to be read in full. */
export const RARE_BUDGET = 1000;

/** How many candidates (the best by their approximate score) are scored exactly: at least one full page. */
export const EXACT_SCORED = 100;

/**
 * The search statement (one per search), over the impact-ordered index (migration 0100):
 *
 * 1. r: for each term of the plan, its best `limit` postings by rank (a range of search_postings_term_rank read
 *    index-only, no sort), with the filters and the required phrases checked on the way when there are any (so the
 *    bound counts only the documents that pass them): index-only too when the postings carry every filter of the
 *    request (network, asset, type, price: migration 0132), else each posting's document is fetched. A term read for
 *    several concepts with the same bound is read once. The union of these documents is the candidate set.
 * 2. approx: each candidate's score from those postings alone: per concept the best field weight among the postings
 *    read for it, text = their IDF-weighted share, plus base_score (the posting's rank less its text part). A lower
 *    bound of the exact score (a posting not read counts nothing; name similarity 0).
 * 3. exact: the EXACT_SCORED best candidates by that bound get the exact score: per concept the best field it matches
 *    in the document's tsvector (the query's concepts restricted to A, B, C, D), name similarity, base_score.
 * 4. One keyset page on (score, id) over every candidate (exact score where computed, else the bound: one
 *    deterministic order, so pages neither repeat nor skip), then the page's documents with their trust blocks
 *    (issue #33: TRUST_COLUMNS, the liveness row joined), so a search is one statement.
 */
function searchSql(where: string, postings: string[] | null, paged: boolean, p: Record<string, number>): string {
  const order = 'ORDER BY p.rank DESC, p.resource_id DESC LIMIT t.k';
  // postings null: a filter (or a required phrase) only the document has, checked on each posting's document.
  const read =
    postings === null
      ? `SELECT p.resource_id, p.fields, p.rank FROM search_postings p JOIN search_documents d ON d.resource_id =
      p.resource_id
        WHERE p.term = t.term AND ${where} ${order}`
      : `SELECT p.resource_id, p.fields, p.rank FROM search_postings p WHERE ${['p.term = t.term', ...postings].join(
          ' AND ',
        )} ${order}`;
  const fw =
    `(CASE WHEN r.fields & 8 <> 0 THEN k.fw[1] WHEN r.fields & 4 <> 0 THEN k.fw[2] WHEN r.fields & 2 <> 0 THEN ` +
    `k.fw[3] ELSE k.fw[4] END)`;
  const wText = `CAST($${p.wText} AS float8)`;
  // An array unnested as a row source is passed through a sub-select, so the planner never sees its length: a custom
  // plan then costs as the generic one does, and PostgreSQL keeps the prepared statement's generic plan after its
  // fifth run instead of planning every search again (planning was 0.8-1.3 ms of a ~4 ms statement; with a visible
  // length the custom plans looked cheaper and were kept). Measured in scripts/bench/README.md "Session 8".
  const arg = (n: number, type: string) => `(SELECT CAST($${n} AS ${type}[]))`;
  return `WITH k AS (SELECT CAST($${p.fw} AS float8[]) AS fw, CAST($${p.idf} AS float8[]) AS idf),
     r AS MATERIALIZED (
       SELECT c.ci, x.resource_id, x.fields, x.rank
         FROM unnest(${arg(p.terms, 'text')}, ${arg(p.limits, 'int')}, ${arg(p.cis, 'text')}) AS t(term, k, cis)
        CROSS JOIN LATERAL (${read}) x CROSS JOIN LATERAL unnest(CAST(t.cis AS int[])) AS c(ci)),
     per AS (
       SELECT r.resource_id, r.ci, max(${fw}) AS w, max(r.rank - ${wText} * ${fw}) AS base FROM r, k GROUP
         BY r.resource_id, r.ci),
     approx AS (
       SELECT per.resource_id, ${wText} * sum(per.w * k.idf[per.ci]) / CAST($${p.idfSum} AS float8) +
         max(per.base) AS score
         FROM per, k GROUP BY per.resource_id),
     concepts AS (
       SELECT * FROM unnest(${arg(p.cq, 'tsquery')}, ${arg(p.ca, 'tsquery')}, ${arg(p.cb, 'tsquery')},
         ${arg(p.cc, 'tsquery')}, ${arg(p.cd, 'tsquery')}, ${arg(p.idf, 'float8')}) AS c(q, qa, qb, qc, qd, idf)),
     exact AS (
       SELECT a.resource_id,
         CAST(${wText} * (SELECT COALESCE(sum(c.idf * CASE WHEN NOT d.document @@ c.q THEN 0.0 WHEN
           d.document @@ c.qa THEN k.fw[1]
                     WHEN d.document @@ c.qb THEN k.fw[2] WHEN d.document @@ c.qc THEN
                       k.fw[3] WHEN d.document @@ c.qd THEN k.fw[4] ELSE k.fw[5] END), 0)
                FROM concepts c) / CAST($${p.idfSum} AS float8)
           + CAST($${p.wName} AS float8) * similarity(lower(d.name), $${p.text}) +
             COALESCE(d.base_score, 0) AS float8) AS score
         FROM (SELECT * FROM approx ORDER BY approx.score DESC, approx.resource_id DESC LIMIT ${EXACT_SCORED}) a
         JOIN search_documents d ON d.resource_id = a.resource_id, k),
     scored AS (
       SELECT a.resource_id AS id, CAST(COALESCE(e.score, a.score) AS float8) AS score FROM approx a LEFT
         JOIN exact e ON e.resource_id = a.resource_id),
     page AS (
       SELECT s.id, s.score FROM scored s
        ${paged ? `WHERE (s.score, s.id) < (CAST($${p.afterScore} AS float8), $${p.afterId})` : ''}
        ORDER BY s.score DESC, s.id DESC LIMIT $${p.limit}),
     items AS (
       SELECT ${ITEM_COLUMNS}, page.score::text AS "scoreText", page.score AS "orderScore",
              d.signals_refreshed_at IS NOT NULL
                AND GREATEST(d.signals_refreshed_at, (SELECT synced_at FROM search_signal_sync WHERE
                  id = 1)) > now() - make_interval(secs => $${p.maxAge}) AS "signalsFresh", ${TRUST_COLUMNS}
         FROM page JOIN search_documents d ON d.resource_id = page.id
         LEFT JOIN resource_liveness l ON l.resource_id = d.resource_id
        WHERE ${postings === null ? 'true' : where})
     -- one row at least: the index lag and the vocabulary's generation come with the page (no statement of their own)
     SELECT i.*, st.unindexed_since IS NOT NULL AS "lagPending",
            EXTRACT(EPOCH FROM now() - st.unindexed_since)::float8 AS "lagSeconds",
            CAST(st.vocabulary_generation AS text) AS "generation"
       FROM (SELECT 1) one
       LEFT JOIN search_index_state st ON st.id = 1
       LEFT JOIN items i ON true
      ORDER BY i."orderScore" DESC, i.id DESC`;
}

/** How many statement shapes get a name. A caller chooses the shape (which of the optional filters, a phrase, a later
 * page: thousands of combinations), and each connection keeps every statement it prepared, so only the first
 * NAMED_SHAPES of a process are named; the rest are sent unnamed (search-candidates.test.ts, the attack). */
export const NAMED_SHAPES = 512;
const shapeNames = new Map<string, string>();

/**
 * The prepared-statement name of a search statement's text (issue #31, search): the text depends only on the request's
 * shape (which filters, a required phrase, a later page), never on its values, so each connection parses and analyses
 * its ~4 KB once instead of per search, and PostgreSQL may switch it to a generic plan after five runs (planning is
 * 1.2 ms of a ~6 ms statement at 100k). Measured with scripts/bench/search-lab.ts at 100k: faster prepared in 46 of
 * the bench rotation's 48 searches, −23 % of their summed wall time. Undefined past NAMED_SHAPES shapes (sent
 * unnamed, as before).
 */
export function searchStatementName(text: string): string | undefined {
  const known = shapeNames.get(text);
  if (known || shapeNames.size >= NAMED_SHAPES) return known;
  const name = `search_${crypto.createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
  shapeNames.set(text, name);
  return name;
}

/** The search statement of one plan (exported for the bench's EXPLAIN). */
export function searchStatement(
  plan: ImpactPlan,
  text: string,
  filters: DiscoveryFilters,
  after: SearchAfter | null,
  limit: number,
  signalsMaxAgeSeconds: number,
): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const filter = filterSql(filters, values);
  let where = filter.where;
  const at = (v: unknown) => (values.push(v), values.length);
  if (plan.required !== null) where += ` AND d.document @@ CAST($${at(plan.required)} AS tsquery)`;
  const F = FIELD_WEIGHTS;
  const c = plan.concepts;
  // A term read for several concepts with the same bound is read once, its postings counted for each of them.
  const reads = new Map<string, { term: string; limit: number; concepts: number[] }>();
  for (const r of plan.reads) {
    const key = `${r.limit}:${r.term}`;
    const read = reads.get(key) ?? reads.set(key, { term: r.term, limit: r.limit, concepts: [] }).get(key)!;
    read.concepts.push(r.concept);
  }
  const p: Record<string, number> = {
    terms: at([...reads.values()].map((r) => r.term)),
    limits: at([...reads.values()].map((r) => r.limit)),
    cis: at([...reads.values()].map((r) => `{${r.concepts.join(',')}}`)),
    cq: at(c.q),
    ca: at(c.a),
    cb: at(c.b),
    cc: at(c.c),
    cd: at(c.d),
    idf: at(c.idf),
    fw: at([F.name, F.tags, F.description, F.schema, F.acrossFields]),
    idfSum: at(plan.idfSum),
    wText: at(RANKING_WEIGHTS.text),
    wName: at(RANKING_WEIGHTS.nameSimilarity),
    text: at(text),
    maxAge: at(signalsMaxAgeSeconds),
    limit: at(limit),
  };
  if (after) {
    p.afterScore = at(after.score);
    p.afterId = at(after.id);
  }
  // Index-only reads unless a filter or a required phrase needs the document (unfiltered: no filter on the read).
  const postings = plan.required !== null ? null : filter.user ? filter.postings : [];
  // The text depends only on the shape (the filters' and the phrase's SQL with their parameter numbers, a later
  // page), so it is built once per shape: the same string each time, which also hashes once for its statement name
  // (building it was ~30-60 us of every search: issue #31). At most NAMED_SHAPES shapes are kept.
  const shape = `${where}\n${postings === null ? '-' : postings.join(' AND ')}\n${after !== null}`;
  let sql = statementTexts.get(shape);
  if (sql === undefined) {
    sql = searchSql(where, postings, after !== null, p);
    if (statementTexts.size < NAMED_SHAPES) statementTexts.set(shape, sql);
  }
  return { text: sql, values };
}
const statementTexts = new Map<string, string>();

/**
 * What the index knows about the query's words, in one statement: each word's lexeme and document count; for the
 * last word, the prefix count and its most frequent completions (a range scan of search_vocabulary_prefix,
 * text_pattern_ops; at most 2,000 words); the most similar indexed lexemes for a query word the vocabulary does not
 * know (pg_trgm similarity >= 0.4 on lexemes of 4+ characters); the required phrases and exclusions as tsquery text
 * and the index size.
 */
export async function resolveWords(db: Sequelize, parsed: ParsedQuery): Promise<ResolvedQuery> {
  const syn = synonymWords(parsed);
  const all = [...parsed.words, ...syn];
  const fix = [...parsed.words.map(() => true), ...syn.map(() => false)];
  const prefix = all.map((_, i) => parsed.lastIsPrefix && i === parsed.words.length - 1);
  const { rows } = await pgQuery<{
    i: string;
    lexeme: string | null;
    ndoc: number;
    prefixNdoc: string | null;
    prefixWords: string[] | null;
    fixes: Array<{ lexeme: string; ndoc: number }> | null;
    phrases: string[];
    excluded: string[];
    total: number;
    generation: string | null;
  }>(
    db,
    `WITH w AS (
       SELECT t.i, t.fix, t.prefix, (SELECT min(l.lexeme) FROM unnest(to_tsvector('english', t.w)) l) AS lexeme
         FROM unnest(CAST($1 AS text[]), CAST($2 AS boolean[]), CAST($3 AS boolean[])) WITH ORDINALITY AS
           t(w, fix, prefix, i))
     SELECT w.i, w.lexeme, COALESCE(v.ndoc, 0) AS ndoc, pw.n AS "prefixNdoc", pw.words AS "prefixWords",
            CASE WHEN w.fix AND v.word IS NULL AND length(w.lexeme) >= 4 AND w.lexeme ~ '^[[:alpha:]]+$' THEN
              (SELECT json_agg(json_build_object('lexeme', f.word, 'ndoc', f.ndoc)) FROM (
                 SELECT s.word, s.ndoc FROM search_vocabulary s
                  WHERE s.word % w.lexeme AND similarity(s.word, w.lexeme) >= 0.4 AND s.ndoc > 0
                  ORDER BY similarity(s.word, w.lexeme) DESC, s.ndoc DESC, s.word LIMIT 2) f) END AS fixes,
            x.phrases, x.excluded, x.total, x.generation
       FROM w LEFT JOIN search_vocabulary v ON v.word = w.lexeme
       LEFT JOIN LATERAL (
         SELECT sum(p.ndoc) AS n, (array_agg(p.word ORDER BY p.ndoc DESC, p.word))[1:${PREFIX_READS}] AS words
           FROM (SELECT p.word, p.ndoc FROM search_vocabulary p
                  WHERE w.prefix AND p.word ~>=~ w.lexeme AND p.word ~<~ (w.lexeme ||
                    chr(1114111)) LIMIT 2000) p) pw ON w.prefix
      CROSS JOIN (SELECT
         ARRAY(SELECT CAST(phraseto_tsquery('english', p) AS text) FROM unnest(CAST($4 AS text[])) WITH
           ORDINALITY AS t(p, i) ORDER BY i) AS phrases,
         ARRAY(SELECT CAST(phraseto_tsquery('english', p) AS text) FROM unnest(CAST($5 AS text[])) WITH
           ORDINALITY AS t(p, i) ORDER BY i) AS excluded,
         (SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = 'search_documents'::regclass) AS total,
         (SELECT CAST(vocabulary_generation AS text) FROM search_index_state WHERE id = 1) AS generation) x
      ORDER BY w.i`,
    [all, fix, prefix, parsed.phrases.map((p) => p.join(' ')), parsed.excluded.map((p) => p.join(' '))],
    // one text for every query: prepared once per connection, as the search statement is per shape
    'search_words',
  );
  const toWord = (r: (typeof rows)[number]): ResolvedWord => ({
    lexeme: r.lexeme,
    ndoc: Number(r.ndoc),
    prefixNdoc: Number(r.prefixNdoc ?? 0),
    fixes: r.fixes ?? [],
    ...(r.prefixWords ? { prefixWords: r.prefixWords } : {}),
  });
  const words = rows.slice(0, parsed.words.length).map(toWord);
  const synonyms = new Map(syn.map((w, i) => [w, toWord(rows[parsed.words.length + i])]));
  const extra = rows[0];
  return {
    words,
    synonyms,
    phrases: extra.phrases,
    excluded: extra.excluded,
    total: Number(extra.total),
    generation: extra.generation ?? undefined,
  };
}

export interface SearchRepositoryOptions {
  /** Document-frequency budget of the rare concepts read in full (default RARE_BUDGET). */
  rareBudget?: number;
}

/** How long a query's word resolution is reused (RESOLUTION_CACHE_SIZE most recent queries, per process). */
export const RESOLUTION_TTL_MS = 30_000;
const RESOLUTION_CACHE_SIZE = 2000;
/** A reused word lookup, with the plans made from it (per candidate bounds). */
type Resolution = { resolved: ResolvedQuery; until: number; plans: Map<string, ImpactPlan | null> };

/**
 * A query's word lookup (resolveWords) is reused while the vocabulary's generation is unchanged: it is bumped by each
 * indexing transaction that adds a word and by each recount (migration 0125), and the search statement reads it, so
 * a reused lookup that went stale is noticed in the same statement and the search is planned again (a newly indexed
 * word is found at once). RESOLUTION_TTL_MS bounds the drift of the index size estimate (IDF weights).
 */
function answer(rows: Row[]): SearchAnswer {
  const head = rows[0];
  const items: SearchAnswer = rows.filter((r) => r.id !== null).map(toRanked);
  if (head) items.lag = { pending: Boolean(head.lagPending), lagSeconds: Math.max(0, Number(head.lagSeconds ?? 0)) };
  return items;
}

export function createSearchRepository(db: Sequelize, opts: SearchRepositoryOptions = {}): DiscoverySearchRepository {
  const resolutions = new Map<string, Resolution>();
  const remember = (key: string, resolved: ResolvedQuery) => {
    resolutions.delete(key);
    if (resolutions.size >= RESOLUTION_CACHE_SIZE) resolutions.delete(resolutions.keys().next().value as string);
    resolutions.set(key, { resolved, until: Date.now() + RESOLUTION_TTL_MS, plans: new Map() });
  };
  // A query's text parsed once (parseQuery and its synonym alternatives are pure; the profile of a search run showed
  // them beside the statement's own building): the last RESOLUTION_CACHE_SIZE texts parsed (a bounded map, so a
  // stranger's ever new texts cost at most that many entries).
  const parsedTexts = new Map<string, { parsed: ParsedQuery; key: string }>();
  const parse = (q: string) => {
    const known = parsedTexts.get(q);
    if (known) return known;
    const parsed = parseQuery(q);
    if (parsedTexts.size >= RESOLUTION_CACHE_SIZE) parsedTexts.delete(parsedTexts.keys().next().value as string);
    const entry = { parsed, key: JSON.stringify(parsed) };
    parsedTexts.set(q, entry);
    return entry;
  };
  return {
    async list(filters, afterId, limit) {
      const values: unknown[] = [];
      let { where } = filterSql(filters, values);
      if (afterId) {
        values.push(afterId);
        where += ` AND d.resource_id < $${values.length}`;
      }
      values.push(limit);
      const { rows } = await pgQuery<Row>(
        db,
        `SELECT ${ITEM_COLUMNS} FROM search_documents d WHERE ${where} ORDER BY d.resource_id DESC LIMIT ` +
          `$${values.length}`,
        values,
      );
      return rows.map(toListingItem);
    },

    async search(q, filters, after, limit, options) {
      const { parsed, key } = parse(q);
      if (parsed.words.length === 0) return [];
      const bounds = {
        rareBudget: options.rareBudget ?? opts.rareBudget ?? RARE_BUDGET,
        rareCap: RARE_CAP,
        candidates: options.candidates,
      };
      const run = async (resolved: ResolvedQuery, plans?: Resolution['plans']) => {
        // The plan depends only on the query, its resolution and the bounds: kept with a reused resolution.
        const planKey = `${bounds.rareBudget}:${bounds.candidates}`;
        let plan = plans?.get(planKey);
        if (plan === undefined) {
          plan = planImpact(parsed, resolved, bounds);
          plans?.set(planKey, plan);
        }
        if (!plan) return null;
        const st = searchStatement(plan, parsed.words.join(' '), filters, after, limit, options.signalsMaxAgeSeconds);
        return (await pgQuery<Row>(db, st.text, st.values, searchStatementName(st.text))).rows;
      };
      const cached = resolutions.get(key);
      if (cached && cached.until > Date.now()) {
        const rows = await run(cached.resolved, cached.plans);
        // The vocabulary changed since (a new word, a recount): this page may be planned on stale counts; look the
        // words up again and answer from the new plan.
        if (rows !== null && rows[0]?.generation === cached.resolved.generation) return answer(rows);
        resolutions.delete(key);
      }
      const resolved = await resolveWords(db, parsed);
      const rows = await run(resolved);
      if (rows === null) return [];
      // Reused only when nothing changed between the lookup and the search statement.
      if (resolved.generation !== undefined && rows[0]?.generation === resolved.generation) remember(key, resolved);
      return answer(rows);
    },

    async indexLag() {
      const {
        rows: [row],
      } = await pgQuery<{ since: Date | null; lag: number | null }>(
        db,
        'SELECT unindexed_since AS since, EXTRACT(EPOCH FROM now() - unindexed_since)::float8 AS lag FROM ' +
          'search_index_state WHERE id = 1',
        [],
        'search_index_lag',
      );
      return { pending: Boolean(row?.since), lagSeconds: Math.max(0, Number(row?.lag ?? 0)) };
    },
  };
}
