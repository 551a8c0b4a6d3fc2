import type { Migration } from './types';

/**
 * Search over a bounded candidate set (ranking strategy pg-fts-candidates-v2, see domain/discovery/ranking.ts).
 *
 * - `search_documents.static_score` is the query-independent part of the score: the nine weighted signal terms
 *   (metadata quality, schema completeness, seller verification, historical uptime, recent settlement success,
 *   type, network, payment asset, price). It is a STORED generated column, so every write of a signal by the
 *   indexing worker (a new document) or the search-sync worker (verification, uptime, settlement success) keeps it
 *   current in the same statement; nothing can leave it stale. The weights are literals here and in
 *   RANKING_WEIGHTS (ranking.ts); a test asserts the two agree. Changing a weight needs a migration
 *   (`ALTER TABLE ... ALTER COLUMN static_score SET EXPRESSION AS (...)`).
 * - `search_documents_static_idx` orders the discoverable documents by static score, so the planner can collect
 *   the best candidates of a broad query without sorting every match.
 * - `search_index_state` (one row) holds when the oldest catalog event still waiting for indexing was recorded
 *   (NULL: the index is up to date). Cataloging sets it when it is NULL; the indexing worker recomputes it after
 *   each batch and the search-sync worker on every pass. Search reads this row instead of counting unindexed
 *   catalog events on every request.
 */
export const migration: Migration = {
  name: '0009-search-candidates',
  async up(q) {
    await q(`
      ALTER TABLE search_documents ADD COLUMN static_score double precision GENERATED ALWAYS AS (CAST(
          0.08 * metadata_quality
        + 0.07 * schema_completeness
        + 0.1 * (CASE WHEN seller_verified THEN 1.0 ELSE 0.0 END)
        + 0.05 * COALESCE(uptime, 0.5)
        + 0.08 * COALESCE(settlement_success, 0.5)
        + 0.03 * (CASE type WHEN 'http' THEN 1.0 ELSE 0.8 END)
        + 0.03 * (CASE network WHEN 'stellar:pubnet' THEN 1.0 ELSE 0.8 END)
        + 0.03 * (CASE WHEN asset_code IN ('USDC', 'EURC') THEN 1.0 ELSE 0.5 END)
        + 0.03 * CAST(1 / (1 + 10 * amount) AS float8)
      AS double precision)) STORED;
      CREATE INDEX search_documents_static_idx ON search_documents (static_score DESC, resource_id DESC)
        WHERE discoverable;

      CREATE TABLE search_index_state (
        id smallint PRIMARY KEY CHECK (id = 1),
        unindexed_since timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      INSERT INTO search_index_state (id, unindexed_since)
        SELECT 1, min(created_at) FROM catalog_events WHERE indexed_at IS NULL;
    `);
  },
};
