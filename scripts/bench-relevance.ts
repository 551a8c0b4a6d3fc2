/**
 * npm run bench:relevance — the judged relevance set (scripts/bench/relevance/: corpus.txt, queries.txt) through the
 * real service (an embedded PostgreSQL of its own, the catalog API, the indexing worker, GET /v1/discovery/search),
 * and a plain BM25 over name and description on the same corpus in the same run. Prints recall@5, MRR@10, nDCG@10
 * and the share of empty answers for both (definitions in scripts/bench/relevance/evaluate.ts); with
 * BENCH_RELEVANCE_DETAIL=1 also each query's top 5 and whether a relevant result is among them.
 */
import path from 'node:path';
import { startEmbeddedDatabase } from '../server/src/data/embedded-database';
import { tempDir } from './bench/processes';
import { bm25, figures, loadCorpus, loadIntoService, loadQueries, searchAll, table } from './bench/relevance/evaluate';

async function main() {
  const pg = await startEmbeddedDatabase({
    dataDir: path.join(tempDir('bench-relevance-pg-'), 'data'),
    persistent: false,
  });
  process.env.TEST_ADMIN_DATABASE_URL = pg.adminUrl;
  const { startTestService } = await import('../server/test/support/test-service');
  const { signUpSeller } = await import('../server/test/support/fixtures');
  const { DEFAULT_USDC_ISSUER } = await import('../server/src/config');
  const { createSearchIndexRepository } = await import('../server/src/data/search-index-repository');
  const svc = await startTestService({
    runJobs: true,
    jobPollMs: 100,
    rateLimit: { points: 100_000, windowSeconds: 60 },
    responseValidation: false,
  });
  try {
    const corpus = loadCorpus();
    const queries = loadQueries();
    console.error(
      `cataloging ${corpus.length} resources in ${new Set(corpus.map((r) => r.category)).size} categories; ` +
        `${queries.length} judged queries`,
    );
    const keys = await loadIntoService(svc.app, corpus, signUpSeller, DEFAULT_USDC_ISSUER['stellar:testnet']);
    for (;;) {
      const [[row]] = (await svc.db.query(
        'SELECT count(*)::int AS n FROM catalog_events WHERE indexed_at IS NULL',
      )) as [Array<{ n: number }>, unknown];
      if (row.n === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await createSearchIndexRepository(svc.db).refreshVocabulary(0);
    await svc.db.query('ANALYZE search_documents');
    const oursAnswers = await searchAll(svc.app, queries, keys);
    const baseline = bm25(corpus);
    const baseAnswers = queries.map((q) => baseline(q.query));
    if (process.env.BENCH_RELEVANCE_DETAIL) {
      const cat = new Map(corpus.map((r) => [r.key, r.category]));
      for (const [i, q] of queries.entries()) {
        const hit = (a: string[]) =>
          a.slice(0, 5).some((k) => q.grades.get(cat.get(k) ?? '') === 2) ? 'hit ' : 'MISS';
        console.log(
          `${hit(oursAnswers[i])} ours | ${hit(baseAnswers[i])} bm25 | ${q.query} -> ${oursAnswers[i]
            .slice(0, 5)
            .map((k) => cat.get(k))
            .join(', ')}`,
        );
      }
    }
    console.log(table(figures(corpus, queries, oursAnswers), figures(corpus, queries, baseAnswers)));
  } finally {
    await svc.stop();
    await pg.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
