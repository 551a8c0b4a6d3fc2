import type { Migration } from './types';

/**
 * An impact-ordered index for search (ranking strategy pg-impact-v5, domain/discovery/ranking.ts), and scores
 * computed from RANKING_WEIGHTS by the code instead of literals in the schema.
 *
 * - `search_postings`: one row per (indexed lexeme, discoverable document): `fields`, which fields of the document
 *   carry the lexeme (bits: name A = 8, tags / MCP tool name B = 4, description C = 2, schema / route / URL D = 1), and
 *   `rank`, the document's whole query-independent score plus the text weight of the best of those fields
 *   (W.text × field weight + base_score). `search_postings_term_rank` orders each term's documents by rank, so a
 *   search reads the best K documents of each query term (a bounded index range, no sort) and merges them; the
 *   primary key (resource_id, term) lets it score those candidates against every query term. `term` is COLLATE "C"
 *   so a prefix is a byte range of that key. Written by the indexing worker with the document, re-ranked when the
 *   document's scores change (data/search-index-repository.ts); deleted with the document.
 * - `search_documents.static_score` stops being a generated column: the indexing worker and the search-sync worker
 *   write it from RANKING_WEIGHTS (data/search-index-repository.ts `scoresSql`), and the sync pass rewrites every
 *   document whose stored score differs from what the current weights give, so a weight change in ranking.ts needs
 *   no migration. `base_score` is static_score + usage + the proven-host tier: everything of a result's score that
 *   does not depend on the query. NULL here: the first search-sync pass computes both and the postings' ranks.
 * - The static-score tiers of migration 0010 and the static-score order index served the candidate step this index
 *   replaces; both are dropped (one less GIN index to write per document).
 */
export const migration: Migration = {
  name: '0100-search-postings',
  async up(q) {
    await q(`
      DROP INDEX IF EXISTS search_documents_ranked_gin;
      DROP FUNCTION IF EXISTS search_rank_document(tsvector, double precision);
      DROP INDEX IF EXISTS search_documents_static_idx;
      ALTER TABLE search_documents ALTER COLUMN static_score DROP EXPRESSION;
      ALTER TABLE search_documents ADD COLUMN base_score double precision;

      CREATE TABLE search_postings (
        resource_id text NOT NULL REFERENCES search_documents(resource_id) ON DELETE CASCADE,
        term text COLLATE "C" NOT NULL,
        fields smallint NOT NULL CHECK (fields BETWEEN 1 AND 15),
        rank double precision NOT NULL,
        PRIMARY KEY (resource_id, term)
      );
      INSERT INTO search_postings (resource_id, term, fields, rank)
        SELECT d.resource_id, t.lexeme,
               GREATEST(1, (CASE WHEN 'A' = ANY (t.weights) THEN 8 ELSE 0 END) | (CASE WHEN 'B' =
                 ANY (t.weights) THEN 4 ELSE 0 END)
                         | (CASE WHEN 'C' = ANY (t.weights) THEN 2 ELSE 0 END) | (CASE
                           WHEN 'D' = ANY (t.weights) THEN 1 ELSE 0 END)),
               0
          FROM search_documents d, unnest(d.document) AS t
         WHERE d.discoverable AND length(t.lexeme) <= 40;
      CREATE INDEX search_postings_term_rank ON search_postings (term, rank DESC, resource_id DESC) INCLUDE (fields);
    `);
  },
};
