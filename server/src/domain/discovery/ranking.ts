import type { FieldWeights, RankingWeights } from './types';
import { DomainError } from '../errors';

/**
 * Ranking strategy pg-impact-v5 (ranked recall over an impact-ordered index, proven hosts first). Every weight of
 * the score lives here (RANKING_WEIGHTS, FIELD_WEIGHTS, PROVEN_HOST_TIER); the SQL reads scores the code computed
 * from them, never a literal of its own.
 *
 *   score = W.text * text + W.nameSimilarity * nameSimilarity + base_score
 *   base_score = static_score + W.usage * usage + PROVEN_HOST_TIER * hostVerified      (stored per document)
 *
 * - hostVerified (issue #29, "proven hosts only"): 1 when the resource's seller verified the domain that most
 *   specifically covers the URL's host (POST /v1/sellers/{id}/verify-domain; migration 0050 host_owner). Every other
 *   term sums to at most W.text + 0.1 + 0.5 + 0.05 = 1.65 < PROVEN_HOST_TIER, so among the results of one query a
 *   resource on an unproven host never outranks one on a proven host; within each tier the order is v3's. A listing
 *   whose host another seller proved is not served at all.
 * - text, in [0, 1]: the query is a list of concepts (its words, each with its synonyms from synonyms.json, typo
 *   corrections from the vocabulary and, for the last word, a prefix: query.ts). A result need not match every
 *   concept; text is the IDF-weighted share of the concepts it matches (IDF as BM25's, from the vocabulary's
 *   document counts), each counted by the best field it matches (FIELD_WEIGHTS): name 1.0, tags / MCP tool name 0.7,
 *   description 0.45, schema text, route and URL host/path 0.2 (0.3 when an alternative's words match, but not in
 *   one field). Quoted phrases must match; -words exclude.
 * - nameSimilarity: pg_trgm similarity of the name to the query's words.
 * - static_score: the nine query-independent signals below, weights summing to 0.5, stored per document.
 * - usage: ln(1 + P) / ln(101), capped at 1, where P = sum over the distinct payers of the last 30 days whose settled
 *   payment paid at least the cataloged price (same network and asset, payer not the payTo) of
 *   min(1, payments at that price * cataloged price / PAYER_UNIT), PAYER_UNIT = 0.01 of the asset
 *   (data/search-index-repository.ts; refreshed by indexing and the search-sync worker). Dust from fresh wallets
 *   adds nothing; a payer counts fully once it paid a cent's worth at the cataloged price.
 *
 * Where the scores are computed: static_score and base_score are written by the indexing worker and the
 * search-sync worker (data/search-index-repository.ts `scoresSql`, from the weights here); a search-sync pass that
 * finds the fingerprint of the score expressions changed (`scoresVersion`) rewrites, in batches, the documents whose
 * stored scores differ from what these weights give, so changing a weight here takes effect on the next pass (30 s)
 * with no migration.
 *
 * Signals of static_score:
 * - metadataQuality, schemaCompleteness: computed at indexing time, in [0, 1] (see indexing.ts).
 * - sellerVerified: 1 when the seller's domain is verified, else 0.
 * - uptime, settlementSuccess: in [0, 1]; a missing signal (no health probe yet, no settled or failed payment in
 *   the last 30 days) counts as neutral 0.5. uptime is the share of the conformance runner's probes over the last
 *   7 days in which the resource's URL answered an unpaid request with 402 and the cataloged terms.
 * - type: http 1.0, mcp 0.8 (any x402 client can call an http resource; an MCP tool needs an MCP client).
 * - network: stellar:pubnet 1.0 (needs a verified domain), stellar:testnet 0.8.
 * - asset: a stablecoin (USDC, EURC) 1.0, any other configured asset 0.5.
 * - price: 1 / (1 + 10 * amount): cheaper ranks higher, all else equal.
 * - demotion (issue #33, migration 0110): RANKING_WEIGHTS.demotion (-4) when the listing is dead (the liveness worker's
 *   probes failed twice in a row), its live 402 drifted from its price or payout without the seller's confirmation,
 *   its price is a decoy (over 50 x the median of comparable listings), or most of its settled calls (at least 3) in
 *   30 days came from wallets its seller controls (self_dealt); else 0. -4 outweighs every positive term
 *   (PROVEN_HOST_TIER + 1.65), so a demoted listing ranks below every other result of the query, on either host tier.
 *   The nine signals above sum to 0.5 without it. uptime is the liveness worker's 7-day share once it probed the
 *   listing (domain/trust/), else the conformance runner's.
 * - usage also leaves out self-dealing (issue #33): payers that are the seller's wallet or the payTo of any of its
 *   listings, and payers the payee paid through us.
 *
 * After scoring, the first page is diversified (diversity.ts): at most two results per origin in the top 10 unless
 * the query names the origin.
 *
 * Candidates (data/search-repository.ts, migration 0100): the impact-ordered index `search_postings` holds one row
 * per (term, document) ranked by W.text * (best field weight of the term in the document) + base_score, which is the
 * document's exact score for a one-word query, bar name similarity. A search reads, for each term of the query, its
 * best SEARCH_CANDIDATES postings by that rank (every posting, up to RARE_CAP, for the *rare* concepts: those whose
 * matches hold at most RARE_BUDGET documents together by the vocabulary's counts); a prefix reads its most frequent
 * completions, an alternative of several words its rarest word. When the request has filters or quoted phrases, they
 * are checked during that read, so the bound counts only documents that pass them. The union is scored exactly from
 * the candidates' postings (every query term, every completion of a prefix). The trade: a document outside the best
 * SEARCH_CANDIDATES of every common word it matches is not returned; one statement answers a search, with no
 * AND-then-OR second pass.
 *
 * Pages are keyset-paged on (score DESC, id DESC) over that candidate set: the cursor carries the score (float8
 * text, which round-trips exactly) and the id of the last item, so pages neither repeat nor skip while the ranking
 * inputs stay the same. Cursors of the earlier strategies (same (score, id) shape; v4's OR mode included) are
 * accepted and continue at the same position.
 */
export const RANKING_STRATEGY = 'pg-impact-v5';
/**
 * Earlier strategies whose cursors still decode (same (score, id) position). A v3 cursor's score has no proven-host
 * tier, so it continues among the unproven results (a client restarting without cursor sees the proven ones first).
 */
const PREVIOUS_STRATEGIES = ['pg-fts-recall-v4', 'pg-fts-recall-v3', 'pg-fts-candidates-v2', 'pg-fts-weighted-v1'];

/** Added to the score of a result whose host is proven: above every other term's sum (1.65), see the formula above. */
export const PROVEN_HOST_TIER = 2;

/** How many postings of each common query term (the best by rank) a search reads as candidates. */
export const SEARCH_CANDIDATES = 300;

export const RANKING_WEIGHTS: RankingWeights = {
  text: 1.0,
  nameSimilarity: 0.1,
  usage: 0.05,
  metadataQuality: 0.08,
  schemaCompleteness: 0.07,
  sellerVerified: 0.1,
  uptime: 0.05,
  settlementSuccess: 0.08,
  type: 0.03,
  network: 0.03,
  asset: 0.03,
  price: 0.03,
  demotion: -4,
};

/** A concept's text weight by the best field it matches in the document (see the formula above). */
export const FIELD_WEIGHTS: FieldWeights = { name: 1.0, tags: 0.7, description: 0.45, schema: 0.2, acrossFields: 0.3 };

/** Ranking signals older than this make a result page partial (the search-sync worker runs every 30 s). */
export const SIGNALS_MAX_AGE_SECONDS = 600;

export function encodeSearchCursor(score: string, id: string, mode: 'and' | 'or' = 'and'): string {
  return Buffer.from(
    JSON.stringify({ v: RANKING_STRATEGY, s: score, i: id, ...(mode === 'or' ? { m: 'or' } : {}) }),
    'utf8',
  ).toString('base64url');
}

/** A finite float8 literal as PostgreSQL prints it (digits, one point, an optional exponent), at most 32 characters. */
function isFloatText(s: string): boolean {
  return s.length <= 32 && /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d{1,3})?$/i.test(s) && Number.isFinite(Number(s));
}

export function decodeSearchCursor(
  cursor: string | undefined,
): { score: string; id: string; mode: 'and' | 'or' } | null {
  if (cursor === undefined || cursor === '') return null;
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      v?: unknown;
      s?: unknown;
      i?: unknown;
      m?: unknown;
    };
    const known = parsed.v === RANKING_STRATEGY || PREVIOUS_STRATEGIES.includes(parsed.v as string);
    if (
      known &&
      typeof parsed.s === 'string' &&
      isFloatText(parsed.s) &&
      typeof parsed.i === 'string' &&
      /^res_[0-9A-HJKMNP-TV-Z]{26}$/.test(parsed.i) &&
      (parsed.m === undefined || parsed.m === 'or')
    ) {
      return { score: parsed.s, id: parsed.i, mode: parsed.m === 'or' ? 'or' : 'and' };
    }
  } catch {
    // fall through
  }
  throw new DomainError('INVALID_REQUEST', 'cursor is not valid', [
    { field: 'cursor', message: `not a cursor of ranking strategy ${RANKING_STRATEGY}` },
  ]);
}
