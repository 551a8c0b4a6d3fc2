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
 *      (websearch_to_tsquery over the same tsvector and GIN index, ORDER BY ts_rank: boolean AND, so it answers
 *      nothing for many of these queries, which the service's ranked recall answers), run with `pg` directly from the
 *      bench, same concurrency, same queries, same run;
 *   3. last line: the ratio of the service's p95 to the plain query's p95.
 * Index freshness after a catalog burst is measured by bench:catalog.
 *
 * Env: BENCH_RESOURCES (100000), BENCH_SEARCHES (3000) and BENCH_SECONDS (20) bound each measured run,
 * BENCH_CONCURRENCY (4), BENCH_WARMUP_PASSES (6: passes over the rotation before measuring), BENCH_PROFILE=1
 * (service under --cpu-prof, SQL statements counted), BENCH_EXPLAIN=1 (after the measured runs, EXPLAIN ANALYZE of the
 * service's search statement and of the plain query; also printed by PROFILE).
 */
import fs from 'node:fs';
import { Pool } from 'pg';
import { closedLoop, envNumber, httpClient, percentile, reportLoad, type Answer, type LoadResult } from './bench/load';
import {
  childPids,
  cpuPerRequest,
  cpuSeconds,
  serviceProcessPids,
  keepFile,
  progress,
  runBench,
  sampleRss,
  startBenchDatabase,
  startNetworkProcess,
  startServiceProcess,
  type BenchDatabase,
} from './bench/processes';
import { profileClockUs, summarizeCpuProfile } from './bench/cpu-profile';
import { performance } from 'node:perf_hooks';
import { seedSearch } from './bench/search-seed';
import { QUERIES, plainQuery, searchOf } from './bench/search-rotation';

const RESOURCES = envNumber('BENCH_RESOURCES', 100_000);
const SEARCHES = envNumber('BENCH_SEARCHES', 3000);
const SECONDS = envNumber('BENCH_SECONDS', 20);
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 4);
const WARMUP_PASSES = envNumber('BENCH_WARMUP_PASSES', 6);
const PROFILE = process.env.BENCH_PROFILE === '1';
const report = reportLoad;

/**
 * CPU milliseconds per request of the bench PostgreSQL (the postmaster and all its children) over `run`: the
 * children are listed again at the end, so a backend a pool opened during the run counts from zero (one that exited
 * during the run is lost: the pools keep theirs).
 */
async function withPostgresCpu<T extends LoadResult & { cpuMs: Record<string, number> }>(
  db: BenchDatabase,
  run: () => Promise<T>,
): Promise<T> {
  const [{ pid }] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const postmaster = Number(/^PPid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  const snapshot = () => new Map([postmaster, ...childPids(postmaster)].map((p) => [p, cpuSeconds(p)]));
  const before = snapshot();
  const result = await run();
  let seconds = 0;
  for (const [p, s] of snapshot()) seconds += s - (before.get(p) ?? 0);
  result.cpuMs.postgres = (seconds * 1000) / Math.max(1, result.ok + result.failed);
  return result;
}

const total = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, b) => a + b, 0);
const fmtCpu = (cpu: Record<string, number>) =>
  Object.entries(cpu)
    .map(([k, v]) => `${k} ${v.toFixed(2)} ms`)
    .join(' + ');

/** The service's own search timing (`discovery_search_duration_seconds`: the search use case, from the decoded
 * request to its page, statement and pool wait included) and its HTTP request count, from /metrics. */
async function searchMetrics(
  api: ReturnType<typeof httpClient>,
  operatorKey: string,
): Promise<{ sum: number; count: number }> {
  const res = await api.request('GET', '/metrics', undefined, { authorization: `Bearer ${operatorKey}` });
  const value = (name: string) =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(res.text)?.[1] ?? NaN);
  return {
    sum: value('discovery_search_duration_seconds_sum'),
    count: value('discovery_search_duration_seconds_count'),
  };
}

/**
 * Where a search's time goes, means over the measured run (same run, same requests): the HTTP round trip as the
 * client sees it; the service's search use case (/metrics: parse, plan, pool wait, the statement, rows to items);
 * the search statement in PostgreSQL (pg_stat_statements: planning + execution, mean). HTTP − use case = the
 * service's per-request overhead outside the use case (HTTP parsing, rate limiting, request validation, handler,
 * presenter, JSON serialization, the socket write, waiting for the event loop).
 */
function overheadReport(
  search: LoadResult,
  before: { sum: number; count: number },
  after: { sum: number; count: number },
  statements: Awaited<ReturnType<BenchDatabase['statementCounts']>>,
  planned: number,
): void {
  const httpMean = search.latencies.reduce((a, b) => a + b, 0) / Math.max(1, search.latencies.length);
  const n = after.count - before.count;
  const useCase = n > 0 ? ((after.sum - before.sum) / n) * 1000 : NaN;
  const st = statements.filter((s) => /WITH k AS \(SELECT CAST/.test(s.query));
  const calls = st.reduce((a, s) => a + s.calls, 0);
  const mean = (f: (s: (typeof st)[number]) => number) => st.reduce((a, s) => a + f(s), 0) / Math.max(1, calls);
  const exec = mean((s) => s.totalMs);
  const plan = mean((s) => s.planTotalMs ?? 0);
  const lookups = statements.filter((s) => /^WITH w AS \(/.test(s.query)).reduce((a, s) => a + s.calls, 0);
  console.log(
    `where a search's time goes (means over the measured run): HTTP ${httpMean.toFixed(2)} ms; the search use ` +
      `case ${useCase.toFixed(2)} ms (${n} searches, /metrics); the search statement in PostgreSQL ` +
      `${(plan + exec).toFixed(2)} ms (planning ${plan.toFixed(2)} + execution ${exec.toFixed(2)}; ${calls} ` +
      `statements, ${planned} of them planned, the rest on a cached generic plan; ${lookups} word lookups); ` +
      `outside the use case ${(httpMean - useCase).toFixed(2)} ms, in the use ` +
      `case beside the statement ${(useCase - plan - exec).toFixed(2)} ms`,
  );
}

/** Each entry of the rotation (query × filter): p50 / p95 of its searches, and how many of the run's slowest 5 %
 * it made: which queries make the p95. */
function entryReport(search: LoadResult, byEntry: Map<number, number[]>): void {
  const cut = percentile(search.latencies, 95);
  const rows = [...byEntry.entries()].map(([entry, ms]) => {
    const s = searchOf(entry);
    const sorted = [...ms].sort((a, b) => a - b);
    const filter = s.type ? 'type=http' : s.maxPrice ? 'maxPrice=0.25' : s.limit === 50 ? 'limit=50' : '';
    return {
      label: `"${s.q}" ${filter}`.trim(),
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      slow: ms.filter((m) => m > cut).length,
      n: ms.length,
    };
  });
  rows.sort((a, b) => b.slow - a.slow || b.p95 - a.p95);
  console.log(`the rotation's entries by their share of the searches over the run's p95 (${cut.toFixed(1)} ms):`);
  for (const r of rows.slice(0, 12))
    console.log(
      `  ${String(r.slow).padStart(4)} of ${String(r.n).padStart(4)} over p95; p50 ${r.p50.toFixed(1)} ms, p95 ` +
        `${r.p95.toFixed(1)} ms  ${r.label}`,
    );
}

async function main() {
  console.log(
    `bench:search — local simulation, separate processes, ${RESOURCES} resources, ${CONCURRENCY} concurrent ` +
      `clients, ≤ ${SEARCHES} searches and ≤ ${SECONDS} s per run${PROFILE ? ', PROFILE mode' : ''}`,
  );
  // pg_stat_statements (with planning time) in every run: the search statement's own time in PostgreSQL is printed
  // beside the HTTP latency, so the service's per-request overhead is a same-run figure.
  const db = await startBenchDatabase({ statements: true, trackPlanning: true });
  const net = await startNetworkProcess({ ledgerCloseMs: 5000 });
  const usdc = net.assets.find((a) => a.code === 'USDC')!;
  await seedSearch(db, usdc.issuer, RESOURCES);

  const serviceStarted = new Date();
  const service = await startServiceProcess({
    databaseUrl: db.url,
    rpcUrl: net.rpcUrl,
    assets: net.assets,
    cpuProfile: PROFILE,
    // The liveness worker (issue 33) would probe every seeded listing's made-up host (DNS lookups that fail, a
    // search-document update per probe) beside the measured searches; off unless BENCH_LIVENESS=1.
    env: { LIVENESS_PROBES: process.env.BENCH_LIVENESS === '1' ? 'true' : 'false' },
  });
  const api = httpClient(service.baseUrl);
  const path = (s: ReturnType<typeof searchOf>) =>
    `/v1/discovery/search?q=${encodeURIComponent(s.q)}` +
    (s.type ? `&type=${s.type}` : '') +
    (s.maxPrice ? `&maxPrice=${s.maxPrice}` : '') +
    `&limit=${s.limit}`;
  let results = 0;
  const countResults = (a: Answer) => {
    if (a.status === 200) results += (JSON.parse(a.text) as { resources?: unknown[] }).resources?.length ?? 0;
    return a.status === 200;
  };
  // Measured searches start once the index is complete (no catalog event waiting) and the service's first
  // search-sync pass is over (incremental since issue 31: the seed leaves nothing queued, so the pass checks its
  // rolling-audit slice and records itself); then VACUUM ANALYZE as autovacuum would.
  const syncDeadline = performance.now() + 600_000;
  for (;;) {
    const [row] = await db.query<{ done: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM search_signal_sync WHERE id = 1 AND synced_at > $1)
          AND NOT EXISTS (SELECT 1 FROM catalog_events WHERE indexed_at IS NULL) AS done`,
      [serviceStarted],
    );
    if (row.done) break;
    if (performance.now() > syncDeadline) throw new Error('the first search-sync pass did not finish within 600 s');
    await new Promise((r) => setTimeout(r, 500));
  }
  // The conformance runner's first run starts with the service and probes up to 200 seeded listings' made-up hosts
  // (DNS lookups, a probe row each): its CPU was inside the measured window (0.07 probes per search at 20k). Measured
  // searches wait until it is over (at most 180 s).
  const conformanceDeadline = performance.now() + 180_000;
  for (;;) {
    const [run] = await db.query<{ runs: number; open: number }>(
      `SELECT count(*)::int AS runs, count(*) FILTER (WHERE status IN ('queued', 'running'))::int AS open
         FROM conformance_runs`,
    );
    if ((run.runs > 0 && run.open === 0) || performance.now() > conformanceDeadline) {
      progress(`conformance runs: ${run.runs}, ${run.open} still open`);
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  await db.query('VACUUM (ANALYZE) search_documents, search_postings');
  progress('first search-sync pass done; search_documents vacuumed and analyzed');
  // Warm-up: WARMUP_PASSES passes over the rotation by CONCURRENCY clients, so the pooled connections the measured run
  // uses have each run every statement shape past PostgreSQL's five custom plans of a prepared statement (a service
  // that has answered a few hundred searches is past them; a run that starts on them measures their planning: at
  // 20k and 700 searches, a third of the statements were still custom). No answer is cached by it.
  progress(`warming up (${WARMUP_PASSES} passes over the queries and filters, ${CONCURRENCY} clients)`);
  const warm = await closedLoop({
    concurrency: CONCURRENCY,
    maxRequests: QUERIES.length * 4 * WARMUP_PASSES,
    maxSeconds: 120,
    send: (i) => api.request('GET', path(searchOf(i))),
  });
  if (warm.failed > 0) throw new Error(`warm-up searches failed: ${warm.firstFailure}`);
  await db.resetStatements();
  const metricsBefore = await searchMetrics(api, service.operatorApiKey);

  progress('measuring search through HTTP');
  const rss = sampleRss(service.pid);
  const fromUs = profileClockUs();
  const byEntry = new Map<number, number[]>();
  const search = await withPostgresCpu(db, () =>
    cpuPerRequest({ service: serviceProcessPids(service.pid), 'load generator': process.pid }, () =>
      closedLoop({
        concurrency: CONCURRENCY,
        maxRequests: SEARCHES,
        maxSeconds: SECONDS,
        send: async (i) => {
          const a = await api.request('GET', path(searchOf(i)));
          const entry = i % (QUERIES.length * 4);
          (byEntry.get(entry) ?? byEntry.set(entry, []).get(entry)!).push(a.ms);
          return a;
        },
        isOk: countResults,
      }),
    ),
  );
  const toUs = profileClockUs();
  const searchRss = rss.stop();
  const statements = await db.statementCounts();
  // How many runs of the search statement PostgreSQL planned (a custom plan, or a generic one being built); the rest
  // ran a cached generic plan.
  const [planned] = await db.query<{ plans: number | null }>(
    `SELECT sum(s.plans)::int AS plans FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = current_database() AND s.query LIKE 'WITH k AS (SELECT CAST%'`,
  );
  const metricsAfter = await searchMetrics(api, service.operatorApiKey);
  progress('measuring listing through HTTP');
  const listing = await withPostgresCpu(db, () =>
    cpuPerRequest({ service: serviceProcessPids(service.pid) }, () =>
      closedLoop({
        concurrency: CONCURRENCY,
        maxRequests: 400,
        maxSeconds: SECONDS,
        send: (i) => api.request('GET', `/v1/discovery/resources?limit=20${i % 2 ? '&minPrice=0.1&maxPrice=0.2' : ''}`),
      }),
    ),
  );
  api.close();
  const profileFile = await service.stop();

  progress('measuring the plain PostgreSQL full-text query (pg, same rows, same filters)');
  const pool = new Pool({ connectionString: db.url, max: CONCURRENCY });
  for (let i = 0; i < QUERIES.length * 4; i++) await pool.query(plainQuery(searchOf(i)));
  const plain = await withPostgresCpu(db, () =>
    cpuPerRequest({ 'load generator': process.pid }, () =>
      closedLoop({
        concurrency: CONCURRENCY,
        maxRequests: SEARCHES,
        maxSeconds: SECONDS,
        send: async (i) => {
          const t = performance.now();
          const r = await pool.query(plainQuery(searchOf(i)));
          return { status: 200, text: String(r.rowCount), ms: performance.now() - t };
        },
      }),
    ),
  );
  await pool.end();

  console.log(
    `\n=== results over ${RESOURCES} resources (local simulation; the machine is shared, so figures vary with ` +
      `other load) ===`,
  );
  report(
    `search through HTTP (${CONCURRENCY} clients)`,
    search,
    `; ${(results / Math.max(1, search.ok)).toFixed(1)} results/page; service RSS peak ` +
      `${searchRss.maxMiB.toFixed(0)} MiB`,
  );
  report(`listing through HTTP (${CONCURRENCY} clients)`, listing);
  report(`plain PostgreSQL full-text query, same filters (pg, ${CONCURRENCY} connections)`, plain);
  overheadReport(search, metricsBefore, metricsAfter, statements, planned.plans ?? 0);
  entryReport(search, byEntry);
  if (PROFILE) {
    const per = (n: number) => (n / Math.max(1, search.ok + search.failed)).toFixed(2);
    console.log(`\n--- profile: per search over the measured run (${search.ok + search.failed} requests) ---`);
    console.log(`SQL statements per search: ${per(statements.reduce((a, s) => a + s.calls, 0))}`);
    for (const s of statements.slice(0, 15))
      console.log(
        `  ${per(s.calls).padStart(6)} × ${s.meanMs.toFixed(3).padStart(8)} ms  ` +
          `${s.query.replace(/\s+/g, ' ').slice(0, 160)}`,
      );
    console.log('rows each query matches (all of them are scored by the ranking expression before LIMIT):');
    for (const q of QUERIES) {
      const [m] = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM search_documents WHERE discoverable AND document @@ ` +
          `websearch_to_tsquery('english', $1)`,
        [q],
      );
      console.log(`  ${String(m.n).padStart(8)}  "${q}"`);
    }
    // What ranking every matching row costs, against scoring a bounded candidate set (the issue's candidate fix),
    // measured in PostgreSQL alone on the same rows: median execution time of 15 runs (EXPLAIN ANALYZE).
    const execMs = async (sql: string, q: string) => {
      const times: number[] = [];
      for (let i = 0; i < 15; i++) {
        const [plan] = await db.query<{ 'QUERY PLAN': Array<{ 'Execution Time': number }> }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
          [q],
        );
        times.push(plan['QUERY PLAN'][0]['Execution Time']);
      }
      return times.sort((a, b) => a - b)[7];
    };
    const rankAll = `SELECT d.resource_id FROM search_documents d WHERE d.discoverable AND d.document @@
      websearch_to_tsquery('english', $1)
                      ORDER BY ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', d.document,
                        websearch_to_tsquery('english', $1), 32) + d.metadata_quality + d.schema_completeness DESC
                        LIMIT 20`;
    const bounded = (
      n: number,
    ) => `SELECT c.resource_id FROM (SELECT d.resource_id, d.document, d.metadata_quality, d.schema_completeness FROM
      search_documents d
                      WHERE d.discoverable AND d.document @@ websearch_to_tsquery('english', $1) LIMIT ${n}) c
                      ORDER BY ts_rank_cd('{0.1, 0.2, 0.4, 1.0}', c.document,
                        websearch_to_tsquery('english', $1), 32) + c.metadata_quality + c.schema_completeness DESC
                        LIMIT 20`;
    console.log(
      'PostgreSQL execution time, median of 15 (rank every match vs rank a bounded candidate set of 1000 / 200):',
    );
    for (const q of ['translate', 'weather forecast', 'image generator']) {
      console.log(
        `  "${q}": rank all ${(await execMs(rankAll, q)).toFixed(1)} ms, first 1000 candidates ` +
          `${(await execMs(bounded(1000), q)).toFixed(1)} ms, first 200 ` +
          `${(await execMs(bounded(200), q)).toFixed(1)} ms`,
      );
    }
    if (profileFile)
      console.log(
        `\n${summarizeCpuProfile(profileFile, 30, { fromUs, toUs })}\n(the measured search run only: profile ` +
          `clock ${fromUs}..${toUs} µs; whole profile kept in ${keepFile(profileFile, 'search')})`,
      );
  }
  if (PROFILE || process.env.BENCH_EXPLAIN === '1')
    await explainSearch(db).catch((err: Error) =>
      console.log(`(EXPLAIN of the search statement failed: ${err.message})`),
    );
  const p95 = percentile(search.latencies, 95);
  const plainP95 = percentile(plain.latencies, 95);
  // The floor of the HTTP chain: the listing endpoint (one index scan, no ranking) through the same service, clients
  // and middleware, against the same plain query. A search cannot come nearer the plain query than this.
  const listingP95 = percentile(listing.latencies, 95);
  console.log(
    `\nthe HTTP chain's floor: listing p95 ${listingP95.toFixed(1)} ms = ${(listingP95 / plainP95).toFixed(2)}× the ` +
      `plain query's p95; CPU per request: search ${fmtCpu(search.cpuMs)}, listing ${fmtCpu(listing.cpuMs)}, plain ` +
      `${fmtCpu(plain.cpuMs)}; search CPU (service + PostgreSQL) ÷ plain's PostgreSQL CPU: ` +
      `${((total(search.cpuMs) - (search.cpuMs['load generator'] ?? 0)) / (plain.cpuMs.postgres ?? NaN)).toFixed(2)}×`,
  );
  console.log(
    `\nratio to a plain PostgreSQL full-text query (same rows, filters, run): search p95 ${p95.toFixed(1)} ms = ` +
      `${(p95 / plainP95).toFixed(2)}× the plain query's p95 ${plainP95.toFixed(1)} ms`,
  );
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of the service's search statement on the bench's rows, after the measured runs (the
 * statement data/search-repository.ts sends for the query, planned by the same code: resolveWords, planImpact,
 * searchStatement), beside the plain full-text query of the baseline: execution time, rows, buffers and the plan's
 * nodes.
 */
async function explainSearch(db: BenchDatabase): Promise<void> {
  const { Sequelize, QueryTypes } = await import('sequelize');
  const { resolveWords, searchStatement, RARE_BUDGET, RARE_CAP } = await import('../server/src/data/search-repository');
  const { parseQuery, planImpact } = await import('../server/src/domain/discovery/query');
  const { SEARCH_CANDIDATES } = await import('../server/src/domain/discovery/ranking');
  const { toStroops } = await import('../server/src/domain/amount');
  const seq = new Sequelize(db.url, { logging: false, pool: { max: 1 } });
  const explain = async (sql: string, bind: unknown[]) => {
    const [r] = await seq.query<{
      'QUERY PLAN': Array<{ Plan: Record<string, unknown>; 'Execution Time': number; 'Planning Time': number }>;
    }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, { bind, type: QueryTypes.SELECT });
    const top = r['QUERY PLAN'][0];
    const nodes: string[] = [];
    const walk = (node: Record<string, unknown>) => {
      nodes.push(String(node['Node Type']) + (node['Index Name'] ? ` ${String(node['Index Name'])}` : ''));
      for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
    };
    walk(top.Plan);
    const buffers = Number(top.Plan['Shared Hit Blocks'] ?? 0) + Number(top.Plan['Shared Read Blocks'] ?? 0);
    return (
      `${top['Execution Time'].toFixed(1)} ms (planning ${top['Planning Time'].toFixed(1)} ms), ` +
      `${top.Plan['Actual Rows']} rows, ${buffers} buffers; ` +
      `${nodes.join(' > ')}`
    );
  };
  console.log(
    "\n--- EXPLAIN (ANALYZE, BUFFERS): the service's search statement and the plain full-text query, limit 20 ---",
  );
  try {
    for (const q of ['translate', 'weather forecast', 'image generator', 'realtime stock feed', 'wether forcast']) {
      const parsed = parseQuery(q);
      const plan = planImpact(parsed, await resolveWords(seq, parsed), {
        rareBudget: RARE_BUDGET,
        rareCap: RARE_CAP,
        candidates: SEARCH_CANDIDATES,
      });
      if (!plan) continue;
      // Unfiltered and with a price filter (the postings carry it since migration 0132: no document read).
      for (const maxPrice of [undefined, '0.25']) {
        const st = searchStatement(
          plan,
          parsed.words.join(' '),
          maxPrice ? { maxPrice: toStroops(maxPrice) } : {},
          null,
          20,
          600,
        );
        await explain(st.text, st.values);
        const label = `"${q}"${maxPrice ? ` maxPrice=${maxPrice}` : ''}`;
        console.log(
          `  ${label} search statement (${plan.reads.length} term reads): ${await explain(st.text, st.values)}`,
        );
        const plain = plainQuery({ q, limit: 20, maxPrice });
        console.log(`  ${label} plain full-text: ${await explain(plain.text, plain.values)}`);
      }
    }
  } finally {
    await seq.close();
  }
}

runBench(main);
