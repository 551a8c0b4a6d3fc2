import { createTestDatabase } from '../support/database';
import { createSequelize } from '../../src/data/database';
import { createJobSystem, type JobSystem } from '../../src/jobs/job-system';
import { createMetrics } from '../../src/metrics/registry';
import { createLogger } from '../../src/logger';
import type { Sequelize } from 'sequelize';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let db: Sequelize;
let jobs: JobSystem;
const metrics = createMetrics('test');

async function until(predicate: () => Promise<boolean> | boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('condition not met in time');
}

beforeAll(async () => {
  database = await createTestDatabase();
  db = createSequelize(database.url);
  jobs = await createJobSystem({
    databaseUrl: database.url,
    mongodbUrl: null,
    db,
    metrics: metrics.jobs,
    logger: createLogger({ silent: true }),
    processEvery: 200,
  });
});
afterAll(async () => {
  await jobs.stop();
  await db.close();
  await database.drop();
});

describe('the job system on the PostgreSQL backend', () => {
  const calls: Record<string, number> = { flaky: 0, broken: 0 };
  it('retries a failing job with backoff until it succeeds, and dead-letters one that fails its last try', async () => {
    jobs.define({
      name: 'flaky-worker',
      retryDelayMs: 50,
      maxRetries: 3,
      async run() {
        calls.flaky++;
        if (calls.flaky < 3) throw new Error('transient');
      },
    });
    jobs.define({
      name: 'broken-worker',
      retryDelayMs: 50,
      maxRetries: 2,
      async run() {
        calls.broken++;
        throw new Error('always broken');
      },
    });
    await jobs.start();
    expect(await jobs.health()).toMatchObject({ status: 'ok' });
    await jobs.enqueue('flaky-worker', { n: 1 });
    await jobs.enqueue('broken-worker', { order: 'x' });
    await until(async () => {
      const [rows] = await db.query(
        "SELECT worker, data, attempts FROM dead_letter_jobs WHERE worker = 'broken-worker'",
      );
      return rows.length === 1 && calls.flaky >= 3;
    });
    const [rows] = await db.query('SELECT worker, data, error FROM dead_letter_jobs');
    expect(rows).toEqual([{ worker: 'broken-worker', data: { order: 'x' }, error: 'always broken' }]);
    expect(calls.broken).toBe(3);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/job_completed_total\{worker="flaky-worker",environment="test"\} 1/);
    expect(text).toMatch(/job_failed_total\{worker="flaky-worker",environment="test"\} 2/);
    expect(text).toMatch(/job_retries_total\{worker="flaky-worker",environment="test"\} 2/);
    expect(text).toMatch(/job_dead_letter_total\{worker="broken-worker",environment="test"\} 1/);
    expect(text).toMatch(/job_last_success_timestamp_seconds\{worker="flaky-worker",environment="test"\} \d+/);
    expect(text).toMatch(/job_processing_duration_seconds_count\{environment="test",worker="flaky-worker"\} 3/);
    expect(text).toMatch(/job_queue_depth\{worker="broken-worker",environment="test"\} 0/);
    expect(text).toMatch(/job_active\{worker="flaky-worker",environment="test"\} 0/);
  });
});

describe('job locks held by a process that died', () => {
  const LOCK_MS = 1_500;
  const started: JobSystem[] = [];
  const jobSystem = (lockLifetimeMs = LOCK_MS) =>
    createJobSystem({
      databaseUrl: database.url,
      mongodbUrl: null,
      db,
      metrics: createMetrics('test').jobs,
      logger: createLogger({ silent: true }),
      processEvery: 200,
      lockLifetimeMs,
    });
  afterAll(async () => {
    for (const s of started) await s.stop();
  });

  it(
    'when a process was killed while it held a job, another process runs that job once the lock lifetime has ' +
      "passed (not after Agenda's 10 minutes)",
    async () => {
      const survivor = await jobSystem();
      started.push(survivor);
      const runs: number[] = [];
      survivor.define({
        name: 'orphaned-worker',
        async run() {
          runs.push(Date.now());
        },
      });
      await survivor.enqueue('orphaned-worker');
      // The row as a SIGKILLed process leaves it: locked, by a process that will never finish or release it.
      const [locked] = await db.query(
        "UPDATE agenda_jobs SET locked_at = now(), last_modified_by = 'marketplace-killed' WHERE name = " +
          "'orphaned-worker' RETURNING locked_at",
      );
      expect(locked).toHaveLength(1);
      const lockedAt = new Date((locked as Array<{ locked_at: string }>)[0].locked_at).getTime();
      await survivor.start();
      await until(() => runs.length > 0, 15_000);
      expect(runs).toHaveLength(1);
      // Not before the dead process's lock expired (one system clock: PostgreSQL's now() and the process's Date.now()).
      expect(runs[0] - lockedAt).toBeGreaterThanOrEqual(LOCK_MS - 5);
    },
  );

  it(
    'when a run outlasts the lock lifetime, its process keeps the lock: the job runs once, is not cancelled, and ' +
      'no other process takes it',
    async () => {
      // A longer lifetime here (renewed every second): a second taker would need the renewals to stall for 3 s.
      const lock = 3_000;
      const a = await jobSystem(lock);
      const b = await jobSystem(lock);
      started.push(a, b);
      const runs: string[] = [];
      for (const [name, system] of [
        ['a', a],
        ['b', b],
      ] as const) {
        system.define({
          name: 'long-worker',
          maxRetries: 0,
          async run() {
            runs.push(name);
            await new Promise((r) => setTimeout(r, lock * 2)); // twice the lifetime: six renewals
          },
        });
      }
      await a.start();
      await b.start();
      await a.enqueue('long-worker');
      await until(async () => {
        const [rows] = await db.query("SELECT count(*)::int AS n FROM agenda_jobs WHERE name = 'long-worker'");
        return runs.length > 0 && (rows as Array<{ n: number }>)[0].n === 0; // removed on completion
      }, 20_000);
      // The row is gone, so no process can take the job now; a take made before that (had the lock lapsed) has
      // pushed its run within a poll (processEvery 200 ms) of locking the row: a second is ample room.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(runs).toHaveLength(1);
      const [dead] = await db.query("SELECT worker FROM dead_letter_jobs WHERE worker = 'long-worker'");
      expect(dead).toEqual([]);
    },
  );
});

describe('the job system when the database drops its connections', () => {
  it(
    'when PostgreSQL terminates every connection of the job system (as a restart does), the process keeps ' +
      'running and jobs run again',
    async () => {
      const system = await createJobSystem({
        databaseUrl: database.url,
        mongodbUrl: null,
        db,
        metrics: createMetrics('test').jobs,
        logger: createLogger({ silent: true }),
        processEvery: 200,
      });
      const runs: number[] = [];
      system.define({
        name: 'after-restart-worker',
        async run() {
          runs.push(Date.now());
        },
      });
      await system.start();
      try {
        await system.enqueue('after-restart-worker');
        await until(() => runs.length === 1);
        const [terminated] = await db.query(
          'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND ' +
            "pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'",
        );
        expect((terminated as unknown[]).length).toBeGreaterThan(0); // the job system's LISTEN connection was cut
        await new Promise((r) => setTimeout(r, 500)); // the 'error' events arrive; unhandled, one would fail this file
        await system.enqueue('after-restart-worker');
        await until(() => runs.length === 2);
      } finally {
        await system.stop();
      }
    },
  );
});
