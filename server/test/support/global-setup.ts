import path from 'node:path';
import crypto from 'node:crypto';
import { startEmbeddedDatabase } from '../../src/data/embedded-database';
import { createTemplateDatabase } from './database';
import { enablePostgresStats, postgresStatsSettings } from './postgres-stats';

/**
 * The globalSetup of every Jest suite (server, both SDKs, end-to-end; see test/jest.base.js). Starts one real
 * PostgreSQL for the run unless DATABASE_URL points at one, then migrates one template database on it
 * (TEST_TEMPLATE_DATABASE) that each test file clones (see database.ts), so files never see each other's rows and
 * the migrations run once per run, not once per file.
 *
 * The embedded server gets its own data folder per run (named after the suite's folder), so suites (and the
 * server suite's parallel and serial halves) never share one; its max_connections is raised for parallel workers
 * (each file's service opens pools). Durability settings stay as PostgreSQL ships them, except that a run given
 * TEST_POSTGRES_ASYNC_COMMIT=1 (the server suite's parallel run, scripts/run-jest.mjs) sets synchronous_commit off: a
 * commit returns before its WAL is flushed to disk. What other sessions see is unchanged (a committed row is visible
 * at once either way); only a crash of PostgreSQL itself could lose the last commits, and no test of that run crashes
 * it (database-restart.test.ts has its own server, in the serial run). It saves a disk flush per commit: 200 commits
 * took 2.4 s with it on and 0.6-1.4 s off on this machine under load (one session). The same run sets fsync off too:
 * PostgreSQL then never waits for the disk (its writes still reach the operating system, so even a crash of
 * PostgreSQL loses nothing; only a crash of the machine could, and the cluster is thrown away after the run). It
 * spares each file's clone and drop of its database their flushes: a drop took 25-30 ms against 50-100 ms, and the
 * first drop after the migrations 0.3 s against 0.8-2.2 s (load 7, three clones and drops per run, two runs each).
 *
 * Per test file, PostgreSQL clones the template and serves the file's connections; on the embedded server it no
 * longer drops the clone (the cluster is deleted at the end of the run: TEST_KEEP_DATABASES, database.ts), and where
 * fsync is off it clones with STRATEGY FILE_COPY (TEST_CLONE_STRATEGY) instead of copying the template through the
 * write-ahead log. Twelve files of the parallel run on 3 workers (postgres-stats.ts), same machine at load 9-13:
 * PostgreSQL's CPU 19.1 and 17.4 s before, 16.7 s without the drops, 14.5 s with FILE_COPY, 13.3 s with both. The
 * whole parallel run (87 files, load 6-14 from other work): 149.9 -> 140.9 s of PostgreSQL CPU, its statements 147.4
 * -> 67.7 s; most of what is left is outside statements (about ten new sessions per file, each a backend start-up).
 * Turning autovacuum off changed nothing measurable (twelve files: 12.5 against 12.3 s), so it stays on.
 */
export default async function globalSetup(_globalConfig: unknown, projectConfig: { rootDir: string }): Promise<void> {
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const suite = path.basename(projectConfig.rootDir); // server, sdk-buyer, sdk-seller, or test (end-to-end)
    const dataDir = path.resolve(
      __dirname,
      '../../../.data',
      `test-postgres-${suite}-${crypto.randomBytes(4).toString('hex')}`,
    );
    const asyncCommit = process.env.TEST_POSTGRES_ASYNC_COMMIT === '1';
    const db = await startEmbeddedDatabase({
      dataDir,
      persistent: false,
      settings: {
        max_connections: 500,
        ...(asyncCommit ? { synchronous_commit: 'off', fsync: 'off' } : {}),
        ...postgresStatsSettings(),
      },
    });
    (globalThis as { __EMBEDDED_DB__?: unknown }).__EMBEDDED_DB__ = db;
    adminUrl = db.adminUrl;
    process.env.TEST_POSTGRES_DATA_DIR = dataDir;
    process.env.TEST_KEEP_DATABASES = '1';
    if (asyncCommit) process.env.TEST_CLONE_STRATEGY = 'FILE_COPY';
  }
  await enablePostgresStats(adminUrl);
  process.env.TEST_ADMIN_DATABASE_URL = adminUrl;
  process.env.TEST_TEMPLATE_DATABASE = await createTemplateDatabase(adminUrl);
}
