import type { Migration } from './types';

/**
 * Static-score tiers in the text index, so the candidate step of a broad query reads only the best-scored of its
 * matches instead of every match's heap row (scripts/bench/PROFILE.md, "Search and catalog (session 3)").
 *
 * `search_rank_document(document, static_score)` is the document's tsvector plus lexemes naming its static-score
 * bucket. f = floor(static_score * 200) is the fine bucket (width 0.005, 0..100): the document carries '#f<f>' and,
 * for every coarse step k = 1..10 with f / 10 >= k, '#c<k>' (cumulative: "static_score is at least k * 0.05"). The
 * lexemes begin with '#', which the text parser never produces, so no user query can match them. A search that
 * wants only documents with f >= T asks `search_rank_document(...) @@ (q && ('#c<ceil(T/10)>' | '#f<T>' | ... |
 * '#f<10*ceil(T/10)-1>'))`: at most ten index entries, and the GIN index intersects them with the query's words
 * before any heap row is read. Both buckets come from one integer f, so the tiers are exactly nested: every document
 * outside a tier has a lower static score than every document inside it (see discovery-repository.ts).
 *
 * The function is IMMUTABLE (plain arithmetic on its arguments); the index is on that expression, so it follows
 * every write of static_score (a generated column) with no trigger and nothing that can go stale.
 */
export const migration: Migration = {
  name: '0010-search-score-tiers',
  async up(q) {
    const f = 'GREATEST(0, LEAST(100, CAST(floor(static_score * 200) AS integer)))';
    const coarse = Array.from({ length: 10 }, (_, i) => `CASE WHEN ${f} / 10 >= ${i + 1} THEN '#c${i + 1}' END`).join(
      ',\n            ',
    );
    await q(`
      CREATE FUNCTION search_rank_document(document tsvector, static_score double precision) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        RETURN document || array_to_tsvector(array_remove(ARRAY[
            '#f' || CAST(${f} AS text),
            ${coarse}], NULL));
      CREATE INDEX search_documents_ranked_gin ON search_documents USING GIN (search_rank_document(document,
        static_score)) WHERE discoverable;
    `);
  },
};
