/**
 * search-lab — the search statement alone, per entry of bench:search's rotation, on a kept database (no service, no
 * HTTP): for iterating on the statement. Seeds LAB_RESOURCES (20000) once into LAB_DIR (kept between runs), then
 * for each query × filter prints the statement's planning and execution time in PostgreSQL (EXPLAIN ANALYZE without
 * per-node timing: median of LAB_ROUNDS, 7) and its buffers, and the plain full-text query's. Local only.
 *
 *   LAB_RESOURCES=100000 npx tsx scripts/bench/search-lab.ts
 *   LAB_CPU=1 LAB_ROUNDS=10 LAB_RESOURCES=100000 npx tsx scripts/bench/search-lab.ts   (CPU per statement, as the
 *     service sends it: prepared per shape)
 *   LAB_AB_BASE=<git revision> LAB_ROUNDS=10 LAB_RESOURCES=100000 npx tsx scripts/bench/search-lab.ts   (the working
 *     tree's search statement against that revision's data/search-repository.ts, on one connection, interleaved:
 *     whether every rotation entry answers the same rows and scores, and the backend CPU per statement of each)
 * LAB_URL=<postgres url> uses a database already running (kept up between runs while iterating) instead of LAB_DIR.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { Keypair } from '@stellar/stellar-sdk';
import { Sequelize } from 'sequelize';
import { startEmbeddedDatabase } from '../../server/src/data/embedded-database';
import { migrate } from '../../server/src/data/database';
import {
  resolveWords,
  searchStatement,
  searchStatementName,
  RARE_BUDGET,
  RARE_CAP,
} from '../../server/src/data/search-repository';
import { parseQuery, planImpact } from '../../server/src/domain/discovery/query';
import { SEARCH_CANDIDATES } from '../../server/src/domain/discovery/ranking';
import { toStroops } from '../../server/src/domain/amount';
import { seedSearch } from './search-seed';
import { QUERIES, searchOf, plainQuery } from './search-rotation';

const RESOURCES = Number(process.env.LAB_RESOURCES ?? 20000);
const ROUNDS = Number(process.env.LAB_ROUNDS ?? 7);
const DIR = process.env.LAB_DIR ?? path.join(os.tmpdir(), `search-lab-${RESOURCES}`, 'data');

async function main() {
  // LAB_URL: a database already running (e.g. the lab's, kept up between runs while iterating); else LAB_DIR's.
  const pg = process.env.LAB_URL ? null : await startEmbeddedDatabase({ dataDir: DIR, persistent: true });
  const url = process.env.LAB_URL ?? (await pg!.urlFor('lab'));
  await migrate(url);
  const client = new Client({ connectionString: url });
  await client.connect();
  const db = { query: async <T>(sql: string, p?: unknown[]) => (await client.query(sql, p)).rows as T[] };
  const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM search_documents');
  if (n < RESOURCES) {
    await seedSearch(db, Keypair.random().publicKey(), RESOURCES);
    await db.query('VACUUM (ANALYZE) search_documents, search_postings');
  }
  const seq = new Sequelize(url, { logging: false, pool: { max: 1 } });
  const measure = async (text: string, values: unknown[]) => {
    const runs: Array<{ plan: number; exec: number; buffers: number; rows: number }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      const r = await client.query(`EXPLAIN (ANALYZE, TIMING OFF, BUFFERS, FORMAT JSON) ${text}`, values);
      const top = (r.rows[0] as { 'QUERY PLAN': Array<Record<string, never>> })['QUERY PLAN'][0];
      const plan = top.Plan as Record<string, number>;
      runs.push({
        plan: top['Planning Time'],
        exec: top['Execution Time'],
        buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'],
        rows: plan['Actual Rows'],
      });
    }
    const med = (f: (r: (typeof runs)[number]) => number) => runs.map(f).sort((a, b) => a - b)[runs.length >> 1];
    return { plan: med((r) => r.plan), exec: med((r) => r.exec), buffers: med((r) => r.buffers), rows: runs[0].rows };
  };
  if (process.env.LAB_CPU === '1' || process.env.LAB_AB_BASE) {
    if (process.env.LAB_AB_BASE) await abStatements(client, seq, process.env.LAB_AB_BASE);
    else await cpuPerStatement(client, seq);
    await seq.close();
    await client.end();
    await pg?.stop();
    return;
  }
  let sumSearch = 0;
  let sumPlain = 0;
  const only = process.env.LAB_ONLY;
  for (let i = 0; i < QUERIES.length * 4; i++) {
    const s = searchOf(i);
    if (only && !s.q.includes(only)) continue;
    const parsed = parseQuery(s.q);
    const plan = planImpact(parsed, await resolveWords(seq, parsed), {
      rareBudget: RARE_BUDGET,
      rareCap: RARE_CAP,
      candidates: SEARCH_CANDIDATES,
    });
    const filter = s.type ? 'type=http' : s.maxPrice ? 'maxPrice=0.25' : s.limit === 50 ? 'limit=50' : '';
    const label = `"${s.q}" ${filter}`.trim();
    const plain = await measure(plainQuery(s).text, plainQuery(s).values);
    sumPlain += plain.plan + plain.exec;
    if (!plan) {
      console.log(`${label}: no plan; plain ${(plain.plan + plain.exec).toFixed(2)} ms`);
      continue;
    }
    const filters = {
      ...(s.type ? { type: s.type as 'http' } : {}),
      ...(s.maxPrice ? { maxPrice: toStroops(s.maxPrice) } : {}),
    };
    const st = searchStatement(plan, parsed.words.join(' '), filters, null, s.limit + 1, 600);
    if (process.env.LAB_EXPLAIN === '1') {
      const r = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${st.text}`, st.values);
      console.log(r.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join('\n'));
    }
    if (process.env.LAB_PREPARED === '1') {
      // wall time of the statement sent unnamed vs as a prepared statement (generic plan after 5 runs), interleaved
      const name = `lab_${i}`;
      const wall: { unnamed: number[]; named: number[] } = { unnamed: [], named: [] };
      for (let k = 0; k < 30; k++) {
        let t = performance.now();
        await client.query({ text: st.text, values: st.values });
        wall.unnamed.push(performance.now() - t);
        t = performance.now();
        await client.query({ name, text: st.text, values: st.values });
        wall.named.push(performance.now() - t);
      }
      const med = (a: number[]) => a.slice(10).sort((x, y) => x - y)[10];
      const plans = await client.query(
        'SELECT generic_plans AS g, custom_plans AS c FROM pg_prepared_statements WHERE name = $1',
        [name],
      );
      console.log(
        `  wall median: unnamed ${med(wall.unnamed).toFixed(2)} ms, prepared ${med(wall.named).toFixed(2)} ms ` +
          `(generic plans ${plans.rows[0]?.g}, custom ${plans.rows[0]?.c})`,
      );
    }
    const m = await measure(st.text, st.values);
    sumSearch += m.plan + m.exec;
    console.log(
      `${label.padEnd(48)} search plan ${m.plan.toFixed(2)} + exec ${m.exec.toFixed(2)} ms, ${m.buffers} buf, ` +
        `${m.rows} rows, ${plan.reads.length} reads | plain ${plain.plan.toFixed(2)} + ${plain.exec.toFixed(2)} ms`,
    );
  }
  console.log(`sum over the rotation: search ${sumSearch.toFixed(1)} ms, plain ${sumPlain.toFixed(1)} ms`);
  await seq.close();
  await client.end();
  await pg?.stop();
}

/** The backend's CPU time (user + system, ms) from /proc: precise to its 10 ms tick, so summed over many statements. */
function backendCpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * (1000 / 100);
}

/**
 * LAB_CPU=1: the rotation as the service runs it: each statement prepared under its shape's name
 * (searchStatementName) on one connection, a warm-up of 6 rounds (past PostgreSQL's five custom plans), then
 * LAB_ROUNDS rounds; prints the backend's CPU per statement (/proc, the statement's whole cost in PostgreSQL: parse,
 * plan when it plans, execution, protocol), the plain query's the same way, and the plans PostgreSQL chose.
 */
async function cpuPerStatement(client: Client, seq: Sequelize): Promise<void> {
  const statements: Array<{ name?: string; text: string; values: unknown[] }> = [];
  const plains: Array<{ text: string; values: unknown[] }> = [];
  for (let i = 0; i < QUERIES.length * 4; i++) {
    const s = searchOf(i);
    const parsed = parseQuery(s.q);
    const plan = planImpact(parsed, await resolveWords(seq, parsed), {
      rareBudget: RARE_BUDGET,
      rareCap: RARE_CAP,
      candidates: SEARCH_CANDIDATES,
    });
    plains.push(plainQuery(s));
    if (!plan) continue;
    const filters = {
      ...(s.type ? { type: s.type as 'http' } : {}),
      ...(s.maxPrice ? { maxPrice: toStroops(s.maxPrice) } : {}),
    };
    const st = searchStatement(plan, parsed.words.join(' '), filters, null, s.limit + 1, 600);
    statements.push({ ...st, name: searchStatementName(st.text) });
  }
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const pid = rows[0].pid;
  const perStatement = async (list: Array<{ name?: string; text: string; values: unknown[] }>) => {
    for (let k = 0; k < 6; k++) for (const st of list) await client.query(st);
    const cpu = backendCpuMs(pid);
    const t = performance.now();
    for (let k = 0; k < ROUNDS; k++) for (const st of list) await client.query(st);
    const n = ROUNDS * list.length;
    return { cpu: (backendCpuMs(pid) - cpu) / n, wall: (performance.now() - t) / n };
  };
  const search = await perStatement(statements);
  const plain = await perStatement(plains);
  const { rows: plans } = await client.query<{ g: number; c: number }>(
    `SELECT sum(generic_plans)::int AS g, sum(custom_plans)::int AS c FROM pg_prepared_statements`,
  );
  console.log(
    `search statement: backend CPU ${search.cpu.toFixed(2)} ms, wall ${search.wall.toFixed(2)} ms per statement ` +
      `(${statements.length} rotation entries × ${ROUNDS} rounds after 6 of warm-up; plans: ${plans[0].g} generic, ` +
      `${plans[0].c} custom); plain query: backend CPU ${plain.cpu.toFixed(2)} ms, wall ${plain.wall.toFixed(2)} ms; ` +
      `load ${os.loadavg()[0].toFixed(1)}`,
  );
}

type StatementBuilder = typeof searchStatement;

/** The search statement builder of a git revision: its data/search-repository.ts, imports pointed at this tree. */
async function statementAt(revision: string): Promise<StatementBuilder> {
  const data = path.resolve(__dirname, '../../server/src/data');
  const source = execFileSync('git', ['show', `${revision}:server/src/data/search-repository.ts`], { encoding: 'utf8' })
    .replace(/from '\.\/([^']+)'/g, (_, f: string) => `from '${path.join(data, f)}'`)
    .replace(/from '\.\.\/([^']+)'/g, (_, f: string) => `from '${path.resolve(data, '..', f)}'`);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'search-ab-')), 'search-repository.ts');
  fs.writeFileSync(file, source);
  return ((await import(file)) as { searchStatement: StatementBuilder }).searchStatement;
}

/**
 * LAB_AB_BASE: the rotation's statements from the base revision (A) and from this tree (B), prepared per shape on one
 * connection: first whether each entry answers the same rows (ids and scores), then LAB_ROUNDS rounds after 6 of
 * warm-up, A and B alternating which goes first, the backend CPU per statement of each (/proc) and B ÷ A per round.
 */
async function abStatements(client: Client, seq: Sequelize, revision: string): Promise<void> {
  const builders: Record<'A' | 'B', StatementBuilder> = { A: await statementAt(revision), B: searchStatement };
  const sets: Record<'A' | 'B', Array<{ name: string; text: string; values: unknown[] }>> = { A: [], B: [] };
  for (let i = 0; i < QUERIES.length * 4; i++) {
    const s = searchOf(i);
    const parsed = parseQuery(s.q);
    const bounds = { rareBudget: RARE_BUDGET, rareCap: RARE_CAP, candidates: SEARCH_CANDIDATES };
    const plan = planImpact(parsed, await resolveWords(seq, parsed), bounds);
    if (!plan) continue;
    const filters = {
      ...(s.type ? { type: s.type as 'http' } : {}),
      ...(s.maxPrice ? { maxPrice: toStroops(s.maxPrice) } : {}),
    };
    for (const v of ['A', 'B'] as const) {
      const st = builders[v](plan, parsed.words.join(' '), filters, null, s.limit + 1, 600);
      sets[v].push({ name: `ab_${v}_${i}`, ...st });
    }
  }
  const answer = async (st: (typeof sets)['A'][number]) =>
    JSON.stringify((await client.query(st)).rows.map((r: Record<string, unknown>) => [r.id, r.scoreText]));
  let same = 0;
  for (const [k, st] of sets.A.entries()) if ((await answer(st)) === (await answer(sets.B[k]))) same++;
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  for (let k = 0; k < 6; k++) for (const st of [...sets.A, ...sets.B]) await client.query(st);
  const cpu: Record<'A' | 'B', number[]> = { A: [], B: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of r % 2 ? (['B', 'A'] as const) : (['A', 'B'] as const)) {
      const before = backendCpuMs(pid);
      for (let k = 0; k < 3; k++) for (const st of sets[v]) await client.query(st);
      cpu[v].push((backendCpuMs(pid) - before) / (3 * sets[v].length));
    }
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
  const ratios = cpu.B.map((b, r) => b / cpu.A[r]);
  console.log(
    `A = ${revision}, B = this tree: ${same} of ${sets.A.length} rotation entries answer the same rows and scores\n` +
      `backend CPU per statement: A ${median(cpu.A).toFixed(2)} ms, B ${median(cpu.B).toFixed(2)} ms (medians of ` +
      `${ROUNDS} rounds × 3 passes over the rotation); B ÷ A per round ${ratios.map((x) => x.toFixed(2)).join(' ')}, ` +
      `median ${median(ratios).toFixed(2)}; load ${os.loadavg()[0].toFixed(1)}`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
