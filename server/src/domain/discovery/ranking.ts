import type { RankingWeights } from './types';
import { DomainError } from '../errors';

/**
 * Ranking strategy pg-fts-candidates-v2.
 *
 *   score = text * W.text + static_score        static_score = Σ signal_i * W_i   (W.text = 0.5, the others sum to 0.5)
 *
 * - text: ts_rank_cd over the weighted tsvector (name A = 1.0, description B = 0.4, schema text, tool name and
 *   route C = 0.2, D = 0.1), normalised by rank/(rank+1) into [0, 1).
 * - metadataQuality, schemaCompleteness: computed at indexing time, in [0, 1] (see indexing.ts).
 * - sellerVerified: 1 when the seller's domain is verified, else 0.
 * - uptime, settlementSuccess: in [0, 1]; a missing signal (no health probe yet, no settled or failed payment in
 *   the last 30 days) counts as neutral 0.5. uptime is the share of the conformance runner's probes over the last
 *   7 days in which the resource's URL answered an unpaid request with 402 and the cataloged terms.
 * - type: http 1.0, mcp 0.8 (any x402 client can call an http resource; an MCP tool needs an MCP client).
 * - network: stellar:pubnet 1.0 (needs a verified domain), stellar:testnet 0.8.
 * - asset: a stablecoin (USDC, EURC) 1.0, any other configured asset 0.5.
 * - price: 1 / (1 + 10 * amount): cheaper ranks higher, all else equal.
 *
 * The nine signal terms do not depend on the query: they are stored per document as `static_score` (a generated
 * column of search_documents, migration 0009, kept current by every signal write of the indexing and search-sync
 * workers). A search takes the documents the text query matches (GIN index), keeps the SEARCH_CANDIDATES best of
 * them by (static_score, id), and computes ts_rank_cd and the full score only for those. The trade: a match whose
 * static score is below the SEARCH_CANDIDATES-th best match's is not returned, however relevant its text, and a
 * query returns at most SEARCH_CANDIDATES results over all its pages (narrow the query or add filters to reach
 * the others). Queries matching fewer documents than the bound rank every match exactly as before.
 *
 * How the candidate step avoids reading every match of a broad query: the text index also holds each document's
 * static-score bucket (migration 0010), so the step first asks for the matches within the best-scored tier of the
 * index (1,000, then 8,000, ... documents; tiers whose share of the estimated matches could not fill the bound are
 * skipped) and widens the tier only when it found fewer than SEARCH_CANDIDATES. The tiers are nested by static score,
 * so the answer is exactly the one of the unrestricted step (data/discovery-repository.ts).
 *
 * Pages are keyset-paged on (score DESC, id DESC) over that candidate set: the cursor carries the score (float8
 * text, which round-trips exactly) and the id of the last item, so pages neither repeat nor skip while the ranking
 * inputs stay the same (the candidate set is a deterministic function of the index). If the search-sync worker
 * changes a signal between two page requests an item may move; the cursor also names the strategy, and a cursor of
 * another strategy is refused (cursors of pg-fts-weighted-v1, the same score over every match, are accepted and
 * continue at the same (score, id) position).
 */
export const RANKING_STRATEGY = 'pg-fts-candidates-v2';
/** The previous strategy: same score, computed over every match. Its cursors still decode. */
const PREVIOUS_STRATEGY = 'pg-fts-weighted-v1';

/** How many matches (the best by static score) a search ranks by text relevance: the bound on its results. */
export const SEARCH_CANDIDATES = 300;

export const RANKING_WEIGHTS: RankingWeights = {
  text: 0.5,
  metadataQuality: 0.08,
  schemaCompleteness: 0.07,
  sellerVerified: 0.1,
  uptime: 0.05,
  settlementSuccess: 0.08,
  type: 0.03,
  network: 0.03,
  asset: 0.03,
  price: 0.03,
};

/** Ranking signals older than this make a result page partial (the search-sync worker runs every 30 s). */
export const SIGNALS_MAX_AGE_SECONDS = 600;

export function encodeSearchCursor(score: string, id: string): string {
  return Buffer.from(JSON.stringify({ v: RANKING_STRATEGY, s: score, i: id }), 'utf8').toString('base64url');
}

/** A finite float8 literal as PostgreSQL prints it (digits, one point, an optional exponent), at most 32 characters. */
function isFloatText(s: string): boolean {
  return s.length <= 32 && /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d{1,3})?$/i.test(s) && Number.isFinite(Number(s));
}

export function decodeSearchCursor(cursor: string | undefined): { score: string; id: string } | null {
  if (cursor === undefined || cursor === '') return null;
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { v?: unknown; s?: unknown; i?: unknown };
    if ((parsed.v === RANKING_STRATEGY || parsed.v === PREVIOUS_STRATEGY) && typeof parsed.s === 'string' && isFloatText(parsed.s) && typeof parsed.i === 'string' && /^res_[0-9A-HJKMNP-TV-Z]{26}$/.test(parsed.i)) {
      return { score: parsed.s, id: parsed.i };
    }
  } catch {
    // fall through
  }
  throw new DomainError('INVALID_REQUEST', 'cursor is not valid', [{ field: 'cursor', message: `not a cursor of ranking strategy ${RANKING_STRATEGY}` }]);
}
