import type { Migration } from './types';

/**
 * No pending list for the vocabulary's trigram index (typo tolerance, data/discovery-repository.ts resolveWords).
 *
 * With GIN's fast update on (the default), words added to search_vocabulary (indexing adds new words, the search-sync
 * recount upserts them, bench:search seeds ~100k URL tokens) go to the index's pending list, up to 4 MB, which every
 * trigram lookup reads in full until VACUUM merges it. Measured on the bench's 100k vocabulary (EXPLAIN ANALYZE,
 * scripts/bench/PROFILE.md "Search: the word lookup"): 511 pending pages, 30,111 pending tuples, 526 buffers and
 * ~21 ms per looked-up word; with the list merged 15 buffers and ~0.1 ms. The vocabulary changes rarely (new words
 * only), so its writes can afford to update the index in place: fast update off, and the existing list merged now.
 */
export const migration: Migration = {
  name: '0023-search-vocabulary-index',
  async up(q) {
    await q(`
      ALTER INDEX search_vocabulary_trgm SET (fastupdate = off);
      SELECT gin_clean_pending_list('search_vocabulary_trgm'::regclass);
    `);
  },
};
