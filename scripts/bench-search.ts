/**
 * bench:search — GET /v1/discovery/search latency through HTTP over BENCH_RESOURCES resources (default 100k;
 * 1000000 supported), the service, the local network and the load generator each in its own process
 * (scripts/bench/processes.ts). Local simulation; loopback only.
 *
 * Seeding writes straight into the bench's own PostgreSQL in SQL (INSERT ... SELECT generate_series, 20k rows per
 * batch, with progress): resources, their versions, catalog events (already indexed) and the search documents the
 * indexing worker would build (same columns and weights). The secondary indexes of those tables are dropped during
 * the load and rebuilt after it (their definitions read from pg_indexes), which keeps 1M rows to a few minutes.
 *
 * It prints:
 *   1. search through HTTP: BENCH_CONCURRENCY clients, queries and filters in rotation (text only, type=http,
 *      maxPrice, limit=50), req/s, p50/p95/p99, the service's peak RSS; and the listing endpoint for comparison;
 *   2. the baseline: a plain PostgreSQL full-text query with the same filters and limit on the same rows
 *      (websearch_to_tsquery over the same tsvector and GIN index, ORDER BY ts_rank), run with `pg` directly from the
 *      bench, same concurrency, same queries, same run;
 *   3. last line: the ratio of the service's p95 to the plain query's p95.
 * Index freshness after a catalog burst is measured by bench:catalog.
 *
 * Env: BENCH_RESOURCES (100000), BENCH_SEARCHES (3000) and BENCH_SECONDS (20) bound each measured run,
 * BENCH_CONCURRENCY (4), BENCH_PROFILE=1 (service under --cpu-prof, SQL statements counted).
 */
import { Keypair } from '@stellar/stellar-sdk';
import { Pool } from 'pg';
import { closedLoop, envNumber, httpClient, latencyLine, percentile, type Answer, type LoadResult } from './bench/load';
import { keepFile, progress, runBench, sampleRss, startBenchDatabase, startNetworkProcess, startServiceProcess, type BenchDatabase } from './bench/processes';
import { profileClockUs, summarizeCpuProfile } from './bench/cpu-profile';
import { performance } from 'node:perf_hooks';

const RESOURCES = envNumber('BENCH_RESOURCES', 100_000);
const SEARCHES = envNumber('BENCH_SEARCHES', 3000);
const SECONDS = envNumber('BENCH_SECONDS', 20);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 4);
const PROFILE = process.env.BENCH_PROFILE === '1';
const SELLERS = 500;
const BATCH = 20_000;

const WORDS_A = ['weather', 'forecast', 'translate', 'image', 'stock', 'crypto', 'news', 'geocode', 'sentiment', 'weather', 'ocr', 'speech', 'flight', 'hotel', 'recipe', 'sports', 'currency', 'email', 'pdf', 'video'];
const WORDS_B = ['api', 'lookup', 'search', 'service', 'tool', 'feed', 'converter', 'analyzer', 'generator', 'checker', 'scanner', 'index', 'planner'];
const WORDS_C = ['global', 'city', 'realtime', 'historical', 'premium', 'fast', 'bulk', 'daily', 'hourly', 'mobile', 'european', 'asian'];
const QUERIES = ['weather forecast', 'translate', 'crypto price', 'image generator', 'realtime stock feed', 'hourly weather city', 'pdf converter', 'speech', 'flight search', 'no such thing here'];

const sqlArray = (a: string[]) => `(ARRAY[${a.map((w) => `'${w}'`).join(',')}])`;

/** The i-th search of the rotation: a query and its filters. */
function searchOf(i: number): { q: string; type?: string; maxPrice?: string; limit: number } {
  const q = QUERIES[i % QUERIES.length];
  const k = Math.floor(i / QUERIES.length) % 4;
  return { q, type: k === 1 ? 'http' : undefined, maxPrice: k === 2 ? '0.25' : undefined, limit: k === 3 ? 50 : 20 };
}

/** Drops the secondary (non-constraint) indexes of `tables`, answering the statements that rebuild them. */
async function dropSecondaryIndexes(db: BenchDatabase, tables: string[]): Promise<string[]> {
  const rows = await db.query<{ name: string; def: string }>(
    `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
      WHERE i.schemaname = 'public' AND i.tablename = ANY($1)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = to_regclass('public.' || quote_ident(i.indexname)))`,
    [tables],
  );
  for (const r of rows) await db.query(`DROP INDEX "${r.name}"`);
  return rows.map((r) => r.def);
}

async function seed(db: BenchDatabase, issuer: string): Promise<void> {
  const wallets = Array.from({ length: SELLERS }, () => Keypair.random().publicKey());
  await db.query(
    `INSERT INTO sellers (id, display_name, wallet_address, domain, domain_verified_at)
     SELECT 'sel_' || lpad(i::text, 26, '0'), 'Bench seller ' || i, w, 'seller' || i || '.bench.example', CASE WHEN i % 2 = 0 THEN now() END
       FROM unnest($1::text[]) WITH ORDINALITY AS t(w, i)`,
    [wallets],
  );
  progress(`seeded ${SELLERS} sellers`);
  const rebuild = await dropSecondaryIndexes(db, ['resources', 'resource_versions', 'catalog_events', 'search_documents']);
  progress(`dropped ${rebuild.length} secondary indexes for the load (rebuilt after it)`);
  const t0 = performance.now();
  for (let start = 1; start <= RESOURCES; start += BATCH) {
    const end = Math.min(RESOURCES, start + BATCH - 1);
    await db.query('BEGIN');
    await db.query(
      `CREATE TEMP TABLE seed ON COMMIT DROP AS
       SELECT 'res_' || lpad(i::text, 26, '0') AS id, 'ver_' || lpad(i::text, 26, '0') AS ver, 'cev_' || lpad(i::text, 26, '0') AS cev,
              s.id AS seller_id, s.wallet_address AS pay_to, s.domain, (s.domain_verified_at IS NOT NULL) AS verified,
              initcap(${sqlArray(WORDS_A)}[1 + i % ${WORDS_A.length}] || ' ' || ${sqlArray(WORDS_B)}[1 + (i / 7) % ${WORDS_B.length}]) || ' ' || i AS name,
              ${sqlArray(WORDS_C)}[1 + (i / 3) % ${WORDS_C.length}] || ' ' || ${sqlArray(WORDS_A)}[1 + (i / 11) % ${WORDS_A.length}]
                || ' data for buyers and agents, paid per call over x402 on Stellar' AS description,
              CASE WHEN i % 10 = 0 THEN 'mcp' ELSE 'http' END AS type,
              ((1 + i % 500)::numeric / 1000) AS amount,
              i
         FROM generate_series($1::int, $2::int) AS i
         JOIN sellers s ON s.id = 'sel_' || lpad((1 + i % ${SELLERS})::text, 26, '0')`,
      [start, end],
    );
    await db.query(
      `INSERT INTO resources (id, seller_id, current_version_id, version, type, name, description, url, route_template, network,
                              pay_to, asset_code, asset_issuer, amount, input_schema, output_schema, extensions, status)
       SELECT id, seller_id, ver, 1, type, name, description,
              'https://' || domain || CASE WHEN type = 'mcp' THEN '/mcp/' || i ELSE '/v1/r' || i || '/{q}' END,
              CASE WHEN type = 'mcp' THEN '/mcp/' || i ELSE '/v1/r' || i || '/{q}' END,
              'stellar:testnet', pay_to, 'USDC', $1, amount,
              '{"type":"object","properties":{"q":{"type":"string","description":"query"}},"required":["q"]}',
              '{"type":"object","properties":{"result":{"type":"string"}}}',
              CASE WHEN type = 'mcp' THEN jsonb_build_object('mcp', jsonb_build_object('toolName', 'tool_' || i)) ELSE '{"bazaar":{"info":{"input":{"type":"http","method":"GET"}}}}'::jsonb END,
              'active'
         FROM seed`,
      [issuer],
    );
    await db.query(
      `INSERT INTO resource_versions (id, resource_id, version, name, description, url, route_template, network, pay_to, asset_code,
                                      asset_issuer, amount, input_schema, output_schema, extensions, seller_domain)
       SELECT s.ver, r.id, 1, r.name, r.description, r.url, r.route_template, r.network, r.pay_to, r.asset_code, r.asset_issuer,
              r.amount, r.input_schema, r.output_schema, r.extensions, s.domain
         FROM seed s JOIN resources r ON r.id = s.id`,
    );
    await db.query(`INSERT INTO catalog_events (id, resource_id, version_id, seller_id, kind, indexed_at) SELECT cev, id, ver, seller_id, 'cataloged', now() FROM seed`);
    await db.query(
      `INSERT INTO search_documents (resource_id, seller_id, version_id, resource_version, type, name, description, url, route_template,
              network, pay_to, asset_code, asset_issuer, amount, status, extension_names, mcp_tool_name, discoverable, document,
              metadata_quality, schema_completeness, seller_verified, settlement_success, signals_refreshed_at)
       SELECT r.id, r.seller_id, r.current_version_id, 1, r.type, r.name, r.description, r.url, r.route_template, r.network, r.pay_to,
              r.asset_code, r.asset_issuer, r.amount, 'active',
              CASE WHEN r.type = 'mcp' THEN ARRAY['mcp'] ELSE ARRAY['bazaar'] END,
              CASE WHEN r.type = 'mcp' THEN 'tool_' || s.i END, true,
              setweight(to_tsvector('english', r.name), 'A') || setweight(to_tsvector('english', r.description), 'B')
                || setweight(to_tsvector('english', 'q query result ' || replace(r.route_template, '/', ' ')), 'C'),
              0.5 + (s.i % 5) / 10.0, 0.6 + (s.i % 4) / 10.0, s.verified,
              CASE WHEN s.i % 3 = 0 THEN (s.i % 100) / 100.0 END, now()
         FROM seed s JOIN resources r ON r.id = s.id`,
    );
    await db.query('COMMIT');
    const rate = end / ((performance.now() - t0) / 1000);
    progress(`seeded ${end}/${RESOURCES} resources (${rate.toFixed(0)} rows/s, ~${((RESOURCES - end) / rate).toFixed(0)} s left)`);
  }
  for (const [i, def] of rebuild.entries()) {
    const t = performance.now();
    await db.query(def);
    progress(`rebuilt index ${i + 1}/${rebuild.length} in ${((performance.now() - t) / 1000).toFixed(1)} s: ${def.replace(/ ON .*? USING /, ' … USING ').slice(0, 90)}`);
  }
  await db.query('ANALYZE');
  progress('ANALYZE done');
}

/** The plain full-text query: same tsvector, same filters and limit, ranked by ts_rank. */
function plainQuery(s: ReturnType<typeof searchOf>): { text: string; values: unknown[] } {
  const values: unknown[] = [s.q, s.limit];
  const where = [`d.document @@ websearch_to_tsquery('english', $1)`, 'd.discoverable'];
  if (s.type) (values.push(s.type), where.push(`d.type = $${values.length}`));
  if (s.maxPrice) (values.push(s.maxPrice), where.push(`d.amount <= $${values.length}::numeric`));
  return {
    text: `SELECT d.resource_id, d.name, d.description, d.url, d.amount::text AS amount
             FROM search_documents d WHERE ${where.join(' AND ')}
            ORDER BY ts_rank(d.document, websearch_to_tsquery('english', $1)) DESC LIMIT $2`,
    values,
  };
}

function report(label: string, r: LoadResult, extra = ''): void {
  console.log(`${label}: ${r.ok} ok, ${r.failed} failed in ${r.seconds.toFixed(2)} s = ${r.rate.toFixed(1)}/s${extra}`);
  console.log(`  latency ${latencyLine(r.latencies)}`);
  if (r.firstFailure) console.log(`  first failure: ${r.firstFailure}`);
}

async function main() {
  console.log(`bench:search — local simulation, separate processes, ${RESOURCES} resources, ${CONCURRENCY} concurrent clients, ≤ ${SEARCHES} searches and ≤ ${SECONDS} s per run${PROFILE ? ', PROFILE mode' : ''}`);
  const db = await startBenchDatabase({ statements: PROFILE });
  const net = await startNetworkProcess({ ledgerCloseMs: 5000 });
  const usdc = net.assets.find((a) => a.code === 'USDC')!;
  await seed(db, usdc.issuer);

  const service = await startServiceProcess({ databaseUrl: db.url, rpcUrl: net.rpcUrl, assets: net.assets, cpuProfile: PROFILE });
  const api = httpClient(service.baseUrl);
  const path = (s: ReturnType<typeof searchOf>) =>
    `/v1/discovery/search?q=${encodeURIComponent(s.q)}${s.type ? `&type=${s.type}` : ''}${s.maxPrice ? `&maxPrice=${s.maxPrice}` : ''}&limit=${s.limit}`;
  let results = 0;
  const countResults = (a: Answer) => {
    if (a.status === 200) results += (JSON.parse(a.text) as { resources?: unknown[] }).resources?.length ?? 0;
    return a.status === 200;
  };
  progress('warming up (one pass over the queries and filters)');
  for (let i = 0; i < QUERIES.length * 4; i++) await api.request('GET', path(searchOf(i)));
  await db.resetStatements();

  progress('measuring search through HTTP');
  const rss = sampleRss(service.pid);
  const fromUs = profileClockUs();
  const search = await closedLoop({ concurrency: CONCURRENCY, maxRequests: SEARCHES, maxSeconds: SECONDS, send: (i) => api.request('GET', path(searchOf(i))), isOk: countResults });
  const toUs = profileClockUs();
  const searchRss = rss.stop();
  const statements = await db.statementCounts();
  progress('measuring listing through HTTP');
  const listing = await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: 400,
    maxSeconds: SECONDS,
    send: (i) => api.request('GET', `/v1/discovery/resources?limit=20${i % 2 ? '&minPrice=0.1&maxPrice=0.2' : ''}`),
  });
  api.close();
  const profileFile = await service.stop();

  progress('measuring the plain PostgreSQL full-text query (pg, same rows, same filters)');
  const pool = new Pool({ connectionString: db.url, max: CONCURRENCY });
  for (let i = 0; i < QUERIES.length * 4; i++) await pool.query(plainQuery(searchOf(i)));
  const plain = await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: SEARCHES,
    maxSeconds: SECONDS,
    send: async (i) => {
      const t = performance.now();
      const r = await pool.query(plainQuery(searchOf(i)));
      return { status: 200, text: String(r.rowCount), ms: performance.now() - t };
    },
  });
  await pool.end();

  console.log(`\n=== results over ${RESOURCES} resources (local simulation; the machine is shared, so figures vary with other load) ===`);
  report(`search through HTTP (${CONCURRENCY} clients)`, search, `; ${(results / Math.max(1, search.ok)).toFixed(1)} results/page; service RSS peak ${searchRss.maxMiB.toFixed(0)} MiB`);
  report(`listing through HTTP (${CONCURRENCY} clients)`, listing);
  report(`plain PostgreSQL full-text query, same filters (pg, ${CONCURRENCY} connections)`, plain);
  if (PROFILE) {
    const per = (n: number) => (n / Math.max(1, search.ok + search.failed)).toFixed(2);
    console.log(`\n--- profile: per search over the measured run (${search.ok + search.failed} requests) ---`);
    console.log(`SQL statements per search: ${per(statements.reduce((a, s) => a + s.calls, 0))}`);
    for (const s of statements.slice(0, 15)) console.log(`  ${per(s.calls).padStart(6)} × ${s.meanMs.toFixed(3).padStart(8)} ms  ${s.query.replace(/\s+/g, ' ').slice(0, 160)}`);
    console.log('rows each query matches (all of them are scored by the ranking expression before LIMIT):');
    for (const q of QUERIES) {
      const [m] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM search_documents WHERE discoverable AND document @@ websearch_to_tsquery('english', $1)`, [q]);
      console.log(`  ${String(m.n).padStart(8)}  "${q}"`);
    }
    // What ranking every matching row costs, against scoring a bounded candidate set (the issue's candidate fix),
    // measured in PostgreSQL alone on the same rows: median execution time of 15 runs (EXPLAIN ANALYZE).
    const execMs = async (sql: string, q: string) => {
      const times: number[] = [];
      for (let i = 0; i < 15; i++) {
        const [plan] = await db.query<{ 'QUERY PLAN': Array<{ 'Execution Time': number }> }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, [q]);
        times.push(plan['QUERY PLAN'][0]['Execution Time']);
      }
      return times.sort((a, b) => a - b)[7];
    };
    const rankAll = `SELECT d.resource_id FROM search_documents d WHERE d.discoverable AND d.document @@ websearch_to_tsquery('english', $1)
                      ORDER BY ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', d.document, websearch_to_tsquery('english', $1), 32) + d.metadata_quality + d.schema_completeness DESC LIMIT 20`;
    const bounded = (n: number) => `SELECT c.resource_id FROM (SELECT d.resource_id, d.document, d.metadata_quality, d.schema_completeness FROM search_documents d
                      WHERE d.discoverable AND d.document @@ websearch_to_tsquery('english', $1) LIMIT ${n}) c
                      ORDER BY ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', c.document, websearch_to_tsquery('english', $1), 32) + c.metadata_quality + c.schema_completeness DESC LIMIT 20`;
    console.log('PostgreSQL execution time, median of 15 (rank every match vs rank a bounded candidate set of 1000 / 200):');
    for (const q of ['translate', 'weather forecast', 'image generator']) {
      console.log(`  "${q}": rank all ${(await execMs(rankAll, q)).toFixed(1)} ms, first 1000 candidates ${(await execMs(bounded(1000), q)).toFixed(1)} ms, first 200 ${(await execMs(bounded(200), q)).toFixed(1)} ms`);
    }
    if (profileFile) console.log(`\n${summarizeCpuProfile(profileFile, 30, { fromUs, toUs })}\n(the measured search run only: profile clock ${fromUs}..${toUs} µs; whole profile kept in ${keepFile(profileFile, 'search')})`);
  }
  const p95 = percentile(search.latencies, 95);
  const plainP95 = percentile(plain.latencies, 95);
  console.log(`\nratio to a plain PostgreSQL full-text query (same rows, filters, run): search p95 ${p95.toFixed(1)} ms = ${(p95 / plainP95).toFixed(2)}× the plain query's p95 ${plainP95.toFixed(1)} ms`);
}

runBench(main);
