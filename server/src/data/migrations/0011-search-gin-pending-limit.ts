import type { Migration } from './types';

/**
 * A small pending list for the two text indexes of search_documents. GIN's fast update appends new entries to a
 * pending list (4 MB by default) that every index scan reads in full until it is merged; every rewrite of a
 * document (indexing, and the search-sync pass's signal updates, which change static_score and so are never HOT)
 * adds to it. With 4 MB pending, the candidate step of every search read ~280 extra pages (~6-9 ms, bench:search
 * profile, scripts/bench/PROFILE.md "Search and catalog (session 3)"). With 64 kB the writer that fills the list
 * merges it (a few pages at a time) and a search reads at most 8 pending pages.
 */
export const migration: Migration = {
  name: '0011-search-gin-pending-limit',
  async up(q) {
    await q(`
      ALTER INDEX search_documents_document_gin SET (gin_pending_list_limit = 64);
      ALTER INDEX search_documents_ranked_gin SET (gin_pending_list_limit = 64);
    `);
  },
};
