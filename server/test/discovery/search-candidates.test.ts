import request from 'supertest';
import { Sequelize } from 'sequelize';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { RANKING_WEIGHTS } from '../../src/domain/discovery/ranking';
import { toStroops } from '../../src/domain/amount';
import { createSearchRepository, NAMED_SHAPES, searchStatementName } from '../../src/data/search-repository';
import { createSearchIndexRepository, scoresSql } from '../../src/data/search-index-repository';
import { createTrustRepository } from '../../src/data/trust-repository';
import { buildSearchDocument } from '../../src/domain/discovery/indexing';
import { checkJsonSchema, compileSchema } from '../../src/domain/catalog/json-schema';
import { catalog, draft, LONG, waitFor, waitIndexed } from './helpers';

/**
 * Search over a bounded candidate set (pg-impact-v5): the stored static score, the candidate bound of the
 * impact-ordered index, the index lag the workers record, the process-local indexing fast path, and the schema-check
 * cache.
 */
let svc: TestService;
let seller: SignedUpSeller;

beforeAll(async () => {
  // Agenda polls once a minute here: anything indexed sooner came through the local fast path.
  svc = await startTestService({ runJobs: true, jobPollMs: 60_000 });
  seller = await signUpSeller(svc.app);
});
afterAll(async () => {
  await svc.stop();
});

async function put(overrides: Record<string, unknown>): Promise<string> {
  const res = await catalog(svc.app, seller.apiKey, {
    sellerId: seller.id,
    resource: draft(seller, { description: LONG, ...overrides }),
  });
  if (res.status !== 201) throw new Error(`catalog failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.resourceId;
}
const search = (query: Record<string, string | number>) => request(svc.app).get('/v1/discovery/search').query(query);
const ids = (res: request.Response) => (res.body.resources as Array<{ id: string }>).map((r) => r.id);

describe('the process-local indexing fast path', () => {
  it(
    'a cataloged resource becomes searchable without a queued job or a poll, and the catalog answer still says ' +
      'queued',
    async () => {
      const res = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resource: draft(seller, { name: 'Pangolin weather api', description: LONG }),
      });
      expect(res.status).toBe(201);
      expect(res.body.indexingStatus).toBe('queued');
      await waitFor(async () => ids(await search({ q: 'pangolin' })).includes(res.body.resourceId), 15_000);
      const [events] = await svc.db.query(
        `SELECT indexed_at IS NOT NULL AS indexed FROM catalog_events WHERE id = '${res.body.catalogEventId}'`,
      );
      expect(events).toEqual([{ indexed: true }]);
      const [jobs] = await svc.db.query(
        `SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'resource-indexing-worker'`,
      );
      expect(jobs).toEqual([{ n: 0 }]);
      const page = await search({ q: 'pangolin' });
      expect(page.body.partialResults).toBe(false);
    },
  );
});

describe('static_score', () => {
  it(
    'is the nine weighted signal terms of RANKING_WEIGHTS, written ' + 'by the code from ranking.ts (no weight in SQL)',
    async () => {
      const a = await put({ name: 'Quagga static api', amount: '0.25' });
      const b = await put({
        name: 'Quagga static mcp',
        type: 'mcp',
        url: `https://${seller.domain}/mcp`,
        routeTemplate: '/mcp',
        extensions: { mcp: { toolName: 'quagga' } },
      });
      await waitIndexed(svc.db);
      // The search-sync worker's signals: uptime and settlement success written as it writes them, then its scores
      // pass.
      await svc.db.query(
        `UPDATE search_documents SET uptime = 0.9, settlement_success = 0.3 WHERE resource_id = '${a}'`,
      );
      await svc.db.query(scoresSql('true'));
      const [rows] = (await svc.db.query(
        `SELECT resource_id AS id, metadata_quality AS mq, schema_completeness AS sc, seller_verified AS sv, uptime,
        settlement_success AS ss,
              type, network, asset_code AS asset, amount::float8 AS amount, static_score AS "static"
         FROM search_documents WHERE resource_id IN ('${a}', '${b}') ORDER BY resource_id`,
      )) as [
        Array<{
          id: string;
          mq: number;
          sc: number;
          sv: boolean;
          uptime: number | null;
          ss: number | null;
          type: string;
          network: string;
          asset: string;
          amount: number;
          static: number;
        }>,
        unknown,
      ];
      expect(rows).toHaveLength(2);
      const w = RANKING_WEIGHTS;
      for (const r of rows) {
        const expected =
          w.metadataQuality * r.mq +
          w.schemaCompleteness * r.sc +
          w.sellerVerified * (r.sv ? 1 : 0) +
          w.uptime * (r.uptime ?? 0.5) +
          w.settlementSuccess * (r.ss ?? 0.5) +
          w.type * (r.type === 'http' ? 1 : 0.8) +
          w.network * (r.network === 'stellar:pubnet' ? 1 : 0.8) +
          w.asset * (['USDC', 'EURC'].includes(r.asset) ? 1 : 0.5) +
          w.price * (1 / (1 + 10 * r.amount));
        expect(r.static).toBeCloseTo(expected, 12);
      }
      const query = ['text', 'nameSimilarity', 'usage', 'demotion'];
      expect(
        Object.entries(w)
          .filter(([k]) => !query.includes(k))
          .reduce((sum, [, v]) => sum + v, 0),
      ).toBeCloseTo(0.5, 12);
      // Issue #33: a dead, drifted, decoy-priced or self-dealt listing loses RANKING_WEIGHTS.demotion (migration 0110).
      const rescore = () => svc.db.query(scoresSql(`d.resource_id = '${a}'`));
      for (const flag of [
        'live = false',
        'price_drift = true',
        'payout_changed = true',
        'price_outlier = true',
        'self_dealt = true',
      ]) {
        await rescore();
        const [[before]] = (await svc.db.query(
          `SELECT static_score AS s FROM search_documents WHERE resource_id = '${a}'`,
        )) as [Array<{ s: number }>, unknown];
        await svc.db.query(`UPDATE search_documents SET ${flag} WHERE resource_id = '${a}'`);
        await rescore();
        const [[after]] = (await svc.db.query(
          `SELECT static_score AS s FROM search_documents WHERE resource_id = '${a}'`,
        )) as [Array<{ s: number }>, unknown];
        expect(after.s - before.s).toBeCloseTo(w.demotion, 12);
        await svc.db.query(
          `UPDATE search_documents SET live = NULL, price_drift = false, payout_changed = false, price_outlier = ` +
            `false, self_dealt = false WHERE resource_id = '${a}'`,
        );
      }
      await rescore();
    },
  );
});

describe('a weight changed in ranking.ts', () => {
  it('is applied to every stored score and posting rank by the next scores pass, with no migration', async () => {
    const id = await put({ name: 'Dhole weights api', amount: '0.1' });
    await waitIndexed(svc.db);
    const read = async () =>
      (
        (await svc.db.query(
          `SELECT d.static_score AS s, d.base_score AS b, p.rank AS r FROM search_documents d JOIN ` +
            `search_postings p ON p.resource_id = d.resource_id AND p.term = 'dhole' WHERE d.resource_id = :id`,
          { replacements: { id } },
        )) as [Array<{ s: number; b: number; r: number }>, unknown]
      )[0][0];
    const before = await read();
    const price = RANKING_WEIGHTS.price;
    try {
      (RANKING_WEIGHTS as { price: number }).price = price + 0.2;
      const [[{ n }]] = (await svc.db.query(scoresSql('true'))) as [Array<{ n: number }>, unknown];
      expect(n).toBeGreaterThan(0);
      const after = await read();
      const delta = 0.2 * (1 / (1 + 10 * 0.1));
      expect(after.s).toBeCloseTo(before.s + delta, 12);
      expect(after.b).toBeCloseTo(before.b + delta, 12);
      expect(after.r).toBeCloseTo(before.r + delta, 12);
    } finally {
      (RANKING_WEIGHTS as { price: number }).price = price;
      await svc.db.query(scoresSql('true'));
    }
    expect((await read()).r).toBeCloseTo(before.r, 12);
  });
});

describe('the candidate bound of the impact-ordered index', () => {
  const made: string[] = [];
  beforeAll(async () => {
    // Five matches of "serval", static scores in the order of price; the cheapest has the weakest text match.
    made.push(await put({ name: 'Feline finder', description: `${LONG} Mentions the serval once.`, amount: '0.001' }));
    for (const amount of ['0.01', '0.1', '1', '10'])
      made.push(await put({ name: `Serval data api ${amount}`, amount }));
    await waitIndexed(svc.db);
  });

  it(
    'only the best N postings of a term by rank are candidates, over all pages, in full-score order without ' +
      'duplicates or gaps',
    async () => {
      const repo = createSearchRepository(svc.db);
      // rareBudget 0: every word counts as common, so the bounded read under test decides the candidates.
      const options = { textWeight: RANKING_WEIGHTS.text, candidates: 3, signalsMaxAgeSeconds: 600, rareBudget: 0 };
      const [postings] = (await svc.db.query(
        `SELECT resource_id AS id FROM search_postings WHERE term = 'serval' AND resource_id IN (:ids) ORDER BY ` +
          `rank DESC, resource_id DESC LIMIT 3`,
        { replacements: { ids: made } },
      )) as [Array<{ id: string }>, unknown];
      const best3 = postings.map((s) => s.id);
      // rank = W.text × field weight + base_score: the three cheapest name matches, above the description match.
      expect(best3).toEqual(made.slice(1, 4));

      const all = await repo.search('serval', {}, null, 10, options);
      expect(all.map((r) => r.id)).toEqual(best3);
      const scores = all.map((r) => Number(r.score));
      expect(scores).toEqual([...scores].sort((x, y) => y - x));

      const paged: string[] = [];
      let after: { score: string; id: string } | null = null;
      for (let i = 0; i < 5; i++) {
        const page = await repo.search('serval', {}, after, 1, options);
        if (page.length === 0) break;
        paged.push(page[0].id);
        after = { score: page[0].score, id: page[0].id };
      }
      expect(paged).toEqual(all.map((r) => r.id));
    },
  );

  it(
    'with filters the bound applies to the documents that pass ' + 'them (a filter never empties a bounded page)',
    async () => {
      const repo = createSearchRepository(svc.db);
      const options = { textWeight: RANKING_WEIGHTS.text, candidates: 2, signalsMaxAgeSeconds: 600, rareBudget: 0 };
      // The two most expensive are outside the best 2 postings of "serval", but the only ones at 1 or more.
      const page = await repo.search('serval', { minPrice: toStroops('1') }, null, 10, options);
      expect(page.map((r) => r.id).sort()).toEqual(made.slice(3).sort());
    },
  );

  it('with fewer matches than the bound every match is ranked (the HTTP search returns all five)', async () => {
    const res = await search({ q: 'serval', limit: 50 });
    expect(res.status).toBe(200);
    expect(res.body.ranking).toEqual({ strategy: 'pg-impact-v5' });
    expect(ids(res).sort()).toEqual([...made].sort());
  });
});

describe('the search statement', () => {
  it("answers each result's trust block itself, the trust read's own block (no second statement)", async () => {
    const id = await put({ name: 'Tarsier trust api' });
    await waitIndexed(svc.db);
    await svc.db.query(
      `INSERT INTO resource_liveness (resource_id, host, next_check_at, live, checked_at, latency_p50_ms,
         latency_p99_ms) VALUES (:id, 'example.test', now(), true, now(), 12, 40)`,
      { replacements: { id } },
    );
    const options = { textWeight: RANKING_WEIGHTS.text, candidates: 300, signalsMaxAgeSeconds: 600 };
    const [hit] = await createSearchRepository(svc.db).search('tarsier', {}, null, 10, options);
    const expected = (await createTrustRepository(svc.db).trustOf([id])).get(id);
    expect(hit.id).toBe(id);
    expect(hit.trust).toEqual(expected);
    expect(hit.trust).toMatchObject({ live: true, latency: { p50Ms: 12, p99Ms: 40 } });
    const res = await search({ q: 'tarsier' });
    expect(res.body.resources[0].trust).toMatchObject({ live: true, latency: { p50Ms: 12, p99Ms: 40 } });
  });
});

describe('the prepared search statement', () => {
  it(
    'is parsed once per request shape on a connection, and every later run (past the fifth PostgreSQL may plan it ' +
      'generically) answers what the first answered, filtered and paged',
    async () => {
      const made: string[] = [];
      for (const amount of ['0.01', '0.1', '1', '10'])
        made.push(await put({ name: `Numbat prepared api ${amount}`, amount }));
      made.push(
        await put({
          name: 'Numbat prepared mcp',
          type: 'mcp',
          url: `https://${seller.domain}/numbat-mcp`,
          routeTemplate: '/numbat-mcp',
          extensions: { mcp: { toolName: 'numbat' } },
        }),
      );
      await waitIndexed(svc.db);
      // One connection, so every run meets the statement that connection prepared.
      const one = new Sequelize(svc.databaseUrl, { logging: false, pool: { max: 1 } });
      try {
        const repo = createSearchRepository(one);
        const options = { textWeight: RANKING_WEIGHTS.text, candidates: 300, signalsMaxAgeSeconds: 600 };
        const shapes: Array<[Parameters<typeof repo.search>[1], number]> = [
          [{}, 10],
          [{ maxPrice: toStroops('1') }, 10],
          [{ type: 'http' }, 2],
        ];
        const run = async () => {
          const out: string[][] = [];
          for (const [filters, limit] of shapes) {
            const first = await repo.search('numbat prepared', filters, null, limit, options);
            const last = first[first.length - 1];
            const next = await repo.search(
              'numbat prepared',
              filters,
              { score: last.score, id: last.id },
              limit,
              options,
            );
            out.push([...first, ...next].map((r) => `${r.id}:${r.score}`));
          }
          return out;
        };
        const firstRun = await run();
        expect(firstRun[0].map((r) => r.split(':')[0]).sort()).toEqual([...made].sort());
        const cheap = firstRun[1].map((r) => r.split(':')[0]);
        expect(cheap).toEqual(expect.arrayContaining(made.slice(0, 3)));
        expect(cheap).not.toContain(made[3]);
        expect(firstRun[2].map((r) => r.split(':')[0]).sort()).toEqual(made.slice(0, 4).sort());
        for (let i = 0; i < 7; i++) expect(await run()).toEqual(firstRun);
        const [statements] = (await one.query(
          `SELECT count(*)::int AS n, min(generic_plans + custom_plans)::int AS runs FROM pg_prepared_statements
            WHERE name ~ '^search_[0-9a-f]{24}$'`,
        )) as [Array<{ n: number; runs: number }>, unknown];
        // three filter shapes, each a first page and a later one, each prepared once and run eight times (whichever
        // plan PostgreSQL chose for each run: its custom plan or, past the fifth, the generic one)
        expect(statements[0]).toEqual({ n: 6, runs: 8 });
        // the word lookup (one text for every query) was prepared on the same connection, looked up once
        const [lookups] = await one.query(
          `SELECT generic_plans + custom_plans AS runs FROM pg_prepared_statements WHERE name = 'search_words'`,
        );
        expect(lookups).toEqual([{ runs: '1' }]);
      } finally {
        await one.close();
      }
    },
  );

  it(
    'is not planned again per search: past its fifth run each shape runs on its generic plan, whatever the query ' +
      '(one word or several, a typo, a prefix), and answers what a freshly planned statement answers',
    async () => {
      for (const name of ['Gerenuk generic forecast api', 'Gerenuk generic translator', 'Gerenuk generic image maker'])
        await put({ name });
      await waitIndexed(svc.db);
      const queries = [
        'gerenuk',
        'gerenuk generic forecast',
        'gerenuk translatr',
        'gerenuk generic ima',
        'gerenuk image maker',
      ];
      const options = { textWeight: RANKING_WEIGHTS.text, candidates: 300, signalsMaxAgeSeconds: 600 };
      const fresh = new Map<string, string[]>();
      for (const q of queries) {
        // a connection of its own per query: the statement is planned for this query's values (a custom plan)
        const own = new Sequelize(svc.databaseUrl, { logging: false, pool: { max: 1 } });
        try {
          fresh.set(
            q,
            (await createSearchRepository(own).search(q, {}, null, 10, options)).map((r) => r.id),
          );
        } finally {
          await own.close();
        }
      }
      const one = new Sequelize(svc.databaseUrl, { logging: false, pool: { max: 1 } });
      try {
        const repo = createSearchRepository(one);
        for (let round = 0; round < 4; round++)
          for (const q of queries)
            expect((await repo.search(q, {}, null, 10, options)).map((r) => r.id)).toEqual(fresh.get(q));
        const [plans] = (await one.query(
          `SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
            WHERE name ~ '^search_[0-9a-f]{24}$'`,
        )) as [Array<{ generic: number; custom: number }>, unknown];
        // one shape (no filter, first page), run 20 times: planned for the first five runs' values, then generic
        expect(plans).toEqual([{ generic: 15, custom: 5 }]);
      } finally {
        await one.close();
      }
    },
  );
});

describe('the impact-ordered index (search_postings) follows the documents', () => {
  const postings = async (id: string) =>
    (
      (await svc.db.query(`SELECT term, fields, rank FROM search_postings WHERE resource_id = :id ORDER BY term`, {
        replacements: { id },
      })) as [Array<{ term: string; fields: number; rank: number }>, unknown]
    )[0];

  it(
    'a cataloged resource has one posting per lexeme, with its fields and rank = W.text × best field weight + ' +
      'base_score',
    async () => {
      const id = await put({ name: 'Aardwolf posting api' });
      await waitIndexed(svc.db);
      const [[doc]] = (await svc.db.query(`SELECT base_score AS base FROM search_documents WHERE resource_id = :id`, {
        replacements: { id },
      })) as [Array<{ base: number }>, unknown];
      const rows = await postings(id);
      const aardwolf = rows.find((r) => r.term === 'aardwolf');
      expect(aardwolf).toBeDefined();
      expect(aardwolf!.fields & 8).toBe(8); // in the name
      expect(aardwolf!.rank).toBeCloseTo(doc.base + RANKING_WEIGHTS.text * 1.0, 12);
      const [[{ n }]] = (await svc.db.query(
        `SELECT count(*)::int AS n FROM (SELECT DISTINCT t.lexeme FROM search_documents d, unnest(d.document) t ` +
          `WHERE d.resource_id = :id) x`,
        { replacements: { id } },
      )) as [Array<{ n: number }>, unknown];
      expect(rows).toHaveLength(n);
    },
  );

  it(
    'an update replaces the postings (the old name no longer finds it), a changed score re-ranks them, a ' +
      'deletion removes them',
    async () => {
      const id = await put({ name: 'Binturong posting api' });
      await waitIndexed(svc.db);
      const res = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resource: draft(seller, { name: 'Caracal posting api', description: LONG }),
        resourceId: id,
      });
      if (res.status !== 201 && res.status !== 200)
        throw new Error(`update failed: ${res.status} ${JSON.stringify(res.body)}`);
      await waitIndexed(svc.db);
      const terms = (await postings(id)).map((r) => r.term);
      expect(terms).toContain('carac'); // the English stemmer's lexeme of "caracal"
      expect(terms).not.toContain('binturong');
      expect(ids(await search({ q: 'binturong' }))).not.toContain(id);
      expect(ids(await search({ q: 'caracal' }))).toContain(id);

      const before = (await postings(id)).find((r) => r.term === 'carac')!.rank;
      await svc.db.query(`UPDATE search_documents SET uptime = 0 WHERE resource_id = :id`, { replacements: { id } });
      await svc.db.query(scoresSql('true'));
      const after = (await postings(id)).find((r) => r.term === 'carac')!.rank;
      expect(after).toBeCloseTo(before - RANKING_WEIGHTS.uptime * 0.5, 12);

      await svc.db.query(`DELETE FROM search_documents WHERE resource_id = :id`, { replacements: { id } });
      expect(await postings(id)).toEqual([]);
    },
  );

  it(
    "each posting carries its document's filter columns (migration 0132), and a re-cataloged price moves them: a " +
      'price-filtered search reads the postings alone and follows the new price',
    async () => {
      const id = await put({ name: 'Okapi pricing api', amount: '0.5' });
      await waitIndexed(svc.db);
      const columns = async () =>
        (
          (await svc.db.query(
            `SELECT DISTINCT p.type = d.type AND p.network = d.network AND p.asset_code = d.asset_code AS same,
                    p.amount::text AS amount
               FROM search_postings p JOIN search_documents d ON d.resource_id = p.resource_id
              WHERE p.resource_id = :id`,
            { replacements: { id } },
          )) as [Array<{ same: boolean; amount: string }>, unknown]
        )[0];
      expect(await columns()).toEqual([{ same: true, amount: '0.5000000' }]);
      expect(ids(await search({ q: 'okapi', maxPrice: '1' }))).toEqual([id]);

      const res = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        resource: draft(seller, { name: 'Okapi pricing api', description: LONG, amount: '5' }),
        resourceId: id,
      });
      if (res.status !== 201 && res.status !== 200)
        throw new Error(`update failed: ${res.status} ${JSON.stringify(res.body)}`);
      await waitIndexed(svc.db);
      expect(await columns()).toEqual([{ same: true, amount: '5.0000000' }]);
      expect(ids(await search({ q: 'okapi', maxPrice: '1' }))).toEqual([]);
      expect(ids(await search({ q: 'okapi', minPrice: '1', type: 'http' }))).toEqual([id]);
    },
  );

  it(
    "a posting whose filter columns went stale never serves a listing its document's filters refuse (the page is " +
      'checked against the documents)',
    async () => {
      const id = await put({ name: 'Quokka stale filter api', amount: '0.5' });
      await waitIndexed(svc.db);
      expect(ids(await search({ q: 'quokka', maxPrice: '1' }))).toEqual([id]);
      // The document's price moves without its postings (no writer does this; the search must not trust them).
      await svc.db.query(`UPDATE search_documents SET amount = 50 WHERE resource_id = :id`, { replacements: { id } });
      expect(ids(await search({ q: 'quokka', maxPrice: '1' }))).toEqual([]);
      await svc.db.query(`UPDATE search_documents SET amount = 0.5 WHERE resource_id = :id`, {
        replacements: { id },
      });
    },
  );

  it('a prefix matches every completion of the last word, and a typo is corrected, as before', async () => {
    const id = await put({ name: 'Wolverine tracking api' });
    await waitIndexed(svc.db);
    await createSearchIndexRepository(svc.db).refreshVocabulary(0);
    expect(ids(await search({ q: 'wolver' }))).toContain(id);
    expect(ids(await search({ q: 'wolverene tracking' }))).toContain(id);
  });
});

describe('indexing a batch of resources in one transaction', () => {
  it(
    'indexes every resource of the batch, removes a deleted one, skips an unknown id, and marks their catalog ' +
      'events indexed',
    async () => {
      const index = createSearchIndexRepository(svc.db);
      const a = await put({ name: 'Margay batch api one' });
      const b = await put({ name: 'Margay batch api two', amount: '0.5' });
      const gone = await put({ name: 'Margay batch api gone' });
      await waitIndexed(svc.db);
      // As if nothing had been indexed yet: documents gone, events unindexed; one resource deleted meanwhile.
      await svc.db.query(`DELETE FROM search_documents WHERE resource_id IN ('${a}', '${b}')`);
      await svc.db.query(
        `UPDATE catalog_events SET indexed_at = NULL WHERE resource_id IN ('${a}', '${b}', '${gone}')`,
      );
      await svc.db.query(`UPDATE resources SET status = 'deleted', deleted_at = now() WHERE id = '${gone}'`);
      const unknown = 'res_00000000000000000000000000';
      const outcomes = await index.indexResources([b, gone, a, unknown, a], (snap) =>
        buildSearchDocument(snap, testNetworks()),
      );
      expect(Object.fromEntries(outcomes)).toEqual({
        [a]: 'indexed',
        [b]: 'indexed',
        [gone]: 'removed',
        [unknown]: 'removed',
      });
      expect(ids(await search({ q: 'margay' })).sort()).toEqual([a, b].sort());
      const [events] = await svc.db.query(
        `SELECT count(*)::int AS n FROM catalog_events WHERE resource_id IN ('${a}', '${b}', '${gone}') AND ` +
          `indexed_at IS NULL`,
      );
      expect(events).toEqual([{ n: 0 }]);
      const [docs] = await svc.db.query(
        `SELECT resource_id AS id, static_score > 0 AS scored, signals_refreshed_at IS NOT NULL AS refreshed FROM ` +
          `search_documents WHERE resource_id IN ('${a}', '${b}') ORDER BY 1`,
      );
      expect(docs).toEqual([a, b].sort().map((id) => ({ id, scored: true, refreshed: true })));
      expect((await search({ q: 'margay' })).body.partialResults).toBe(false);
    },
  );
});

describe('the index lag search reads', () => {
  it(
    'is the value the indexing records: behind after a catalog ' + 'change nobody indexed, up to date once indexed',
    async () => {
      const index = createSearchIndexRepository(svc.db);
      // An event left unindexed (a process that crashed between its catalog write and the indexing).
      const id = await put({ name: 'Tayra lag api' });
      await waitIndexed(svc.db);
      await svc.db.query(`UPDATE catalog_events SET indexed_at = NULL WHERE resource_id = '${id}'`);
      await index.markBehind();
      expect((await search({ q: 'tayra' })).body.partialResults).toBe(true);
      const outcome = await index.indexResource(id, (snap) => buildSearchDocument(snap, testNetworks()));
      expect(outcome).toBe('indexed');
      expect((await search({ q: 'tayra' })).body.partialResults).toBe(false);
    },
  );

  it('a stale "behind" mark with nothing left to index is cleared by the search-sync pass', async () => {
    await svc.db.query(`UPDATE search_index_state SET unindexed_since = now() - interval '1 hour' WHERE id = 1`);
    expect((await search({ q: 'tayra' })).body.partialResults).toBe(true);
    await createSearchIndexRepository(svc.db).recordLag();
    expect((await search({ q: 'tayra' })).body.partialResults).toBe(false);
  });
});

describe('the schema check cache', () => {
  it(
    'answers a repeated schema as the first time (valid and invalid), and compiles one validator per schema ' +
      'content',
    () => {
      const bad = { type: 'object', properties: { a: { type: 'nonsense' } } };
      const first = checkJsonSchema(bad);
      expect(first).toMatch(/is not a valid JSON Schema/);
      expect(checkJsonSchema(JSON.parse(JSON.stringify(bad)))).toBe(first);
      const good = { type: 'object', required: ['q'], properties: { q: { type: 'string' } } };
      expect(checkJsonSchema(good)).toBeNull();
      expect(checkJsonSchema({ ...good })).toBeNull();
      const validate = compileSchema(good);
      expect(compileSchema(JSON.parse(JSON.stringify(good)))).toBe(validate);
      expect(validate({ q: 'x' })).toBeNull();
      expect(validate({})).toMatch(/must have required property 'q'/);
    },
  );
});

// Last in the file: it fills this process's table of statement names.
describe('attack: a stranger sending ever new search shapes', () => {
  it(
    'names at most NAMED_SHAPES statements per process; past the bound a new shape runs unnamed (nothing more is ' +
      'prepared on the connection) and answers as before, and a shape named earlier keeps its name',
    async () => {
      const made = [await put({ name: 'Tuatara api' }), await put({ name: 'Tuatara feed' })];
      await waitIndexed(svc.db);
      const one = new Sequelize(svc.databaseUrl, { logging: false, pool: { max: 1 } });
      try {
        const repo = createSearchRepository(one);
        const options = { textWeight: RANKING_WEIGHTS.text, candidates: 300, signalsMaxAgeSeconds: 600 };
        const prepared = async () =>
          (
            (await one.query(
              `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name ~ '^search_[0-9a-f]{24}$'`,
            )) as [Array<{ n: number }>, unknown]
          )[0][0].n;
        const unfiltered = (await repo.search('tuatara', {}, null, 10, options)).map((r) => r.id);
        expect(unfiltered.sort()).toEqual([...made].sort());
        const before = await prepared();
        // The shapes the stranger's requests make (each distinct text asks for a name) until the table is full.
        let named = 0;
        for (let i = 0; i < NAMED_SHAPES + 100; i++) if (searchStatementName(`shape ${i} of a stranger`)) named++;
        expect(named).toBeLessThanOrEqual(NAMED_SHAPES);
        expect(searchStatementName('one more shape of a stranger')).toBeUndefined();
        // A shape never seen before (three filters together, and its later page: the filters alone combine into
        // thousands of shapes) is sent unnamed and still answers.
        const odd = { sellerId: seller.id, minPrice: toStroops('0.0001'), type: 'http' as const };
        const first = await repo.search('tuatara', odd, null, 1, options);
        const next = await repo.search('tuatara', odd, first[0], 1, options);
        expect([...first, ...next].map((r) => r.id).sort()).toEqual([...made].sort());
        // The shape named before the table filled keeps its prepared statement; nothing new was prepared.
        expect((await repo.search('tuatara', {}, null, 10, options)).map((r) => r.id).sort()).toEqual(unfiltered);
        expect(await prepared()).toBe(before);
      } finally {
        await one.close();
      }
    },
  );
});
