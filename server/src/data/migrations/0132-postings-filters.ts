import type { Migration } from './types';

/**
 * The request filters a search most often carries (network, asset, type, price range) on the impact-ordered index
 * (issue #31, search): each posting carries its document's `type`, `network`, `asset_code` and `amount`, and
 * `search_postings_term_rank` includes them, so a filtered search reads each term's best postings that pass those
 * filters index-only, instead of fetching every posting's document (index probe + heap page) until the bound is
 * filled: at 100k resources a `type=http` or `maxPrice` search read 1,700–5,300 buffers, an unfiltered one ~500.
 * The columns are written with the postings (data/search-index-repository.ts `postingsSql`), which the indexing
 * worker rewrites whenever it rewrites the document, the only writer of those four document columns.
 */
export const migration: Migration = {
  name: '0132-postings-filters',
  async up(q) {
    await q(`
      DROP INDEX IF EXISTS search_postings_term_rank;
      ALTER TABLE search_postings ADD COLUMN type text, ADD COLUMN network text, ADD COLUMN asset_code text,
        ADD COLUMN amount numeric(20, 7);
      UPDATE search_postings p SET type = d.type, network = d.network, asset_code = d.asset_code, amount = d.amount
        FROM search_documents d WHERE d.resource_id = p.resource_id;
      ALTER TABLE search_postings ALTER COLUMN type SET NOT NULL, ALTER COLUMN network SET NOT NULL,
        ALTER COLUMN asset_code SET NOT NULL, ALTER COLUMN amount SET NOT NULL;
      CREATE INDEX search_postings_term_rank ON search_postings (term, rank DESC, resource_id DESC)
        INCLUDE (fields, type, network, asset_code, amount);
    `);
  },
};
