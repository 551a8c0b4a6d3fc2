import { startTestService, type TestService } from '../support/test-service';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

type Row = Record<string, unknown>;
const rows = async (sql: string) => ((await svc.db.query(sql)) as [Row[], unknown])[0];

describe('the vocabulary trigram index (typo tolerance, migration 0023)', () => {
  it(
    'when many words enter the vocabulary, the trigram index keeps no pending list and a typo still finds its ' +
      'word',
    async () => {
      // Like bench:search's vocabulary: thousands of URL tokens (r1 ... r5000) next to real words. With GIN's fast
      // update on, they would wait in the index's pending list, which every typo lookup reads in full (462 ms per
      // search
      // at 100k, scripts/bench/PROFILE.md "Search: the word lookup").
      await svc.db.query(
        `INSERT INTO search_vocabulary (word, ndoc) SELECT 'r' || i, 1 FROM generate_series(1, 5000) AS i
       UNION ALL SELECT 'weather', 40 ON CONFLICT (word) DO NOTHING`,
      );
      await svc.db.query('CREATE EXTENSION IF NOT EXISTS pgstattuple');
      const [gin] = await rows(`SELECT pending_pages, pending_tuples FROM pgstatginindex('search_vocabulary_trgm')`);
      expect(Number(gin.pending_pages)).toBe(0);
      expect(Number(gin.pending_tuples)).toBe(0);

      const fixes = await rows(
        `SELECT word FROM search_vocabulary WHERE word % 'wether' AND similarity(word, 'wether') >= 0.4 ORDER BY ` +
          `similarity(word, 'wether') DESC LIMIT 2`,
      );
      expect(fixes.map((r) => r.word)).toContain('weather');
    },
  );
});
