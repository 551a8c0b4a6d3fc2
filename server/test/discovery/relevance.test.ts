import { startTestService, type TestService } from '../support/test-service';
import { signUpSeller } from '../support/fixtures';
import { DEFAULT_USDC_ISSUER } from '../../src/config';
import { createSearchIndexRepository } from '../../src/data/search-index-repository';
import { waitIndexed } from './helpers';
import {
  bm25,
  figures,
  loadCorpus,
  loadIntoService,
  loadQueries,
  searchAll,
  table,
} from '../../../scripts/bench/relevance/evaluate';

/**
 * The judged relevance set (scripts/bench/relevance/): search must keep finding what the queries mean. Floors, not
 * timings: recall@5 at least RECALL_FLOOR, and no figure below the plain BM25 baseline computed on the same set.
 */
const RECALL_FLOOR = 0.9;

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ runJobs: true, jobPollMs: 100, rateLimit: { points: 100_000, windowSeconds: 60 } });
});
afterAll(async () => {
  await svc.stop();
});

describe('the judged relevance set', () => {
  it(
    'when the corpus is cataloged, recall@5 stays above the floor ' + 'and every figure at or above the BM25 baseline',
    async () => {
      const corpus = loadCorpus();
      const queries = loadQueries();
      const keys = await loadIntoService(svc.app, corpus, signUpSeller, DEFAULT_USDC_ISSUER['stellar:testnet']);
      await waitIndexed(svc.db);
      await createSearchIndexRepository(svc.db).refreshVocabulary(0);
      await svc.db.query('ANALYZE search_documents');
      const ours = figures(corpus, queries, await searchAll(svc.app, queries, keys));
      const baseline = figures(
        corpus,
        queries,
        queries.map((q) => bm25(corpus)(q.query)),
      );
      if (process.env.RELEVANCE_TABLE) console.log(table(ours, baseline));
      expect(ours.recallAt5).toBeGreaterThanOrEqual(RECALL_FLOOR);
      expect(ours.recallAt5).toBeGreaterThanOrEqual(baseline.recallAt5);
      expect(ours.mrrAt10).toBeGreaterThanOrEqual(baseline.mrrAt10);
      expect(ours.ndcgAt10).toBeGreaterThanOrEqual(baseline.ndcgAt10);
      expect(ours.emptyShare).toBeLessThanOrEqual(0.05);
    },
    180_000,
  );
});
