import { Agenda, backoffStrategies, type AgendaBackend, type Job } from 'agenda';
import { Pool } from 'pg';
import type { Sequelize } from 'sequelize';
import type { JobMetrics } from '../metrics/registry';
import type { Logger } from '../logger';
import type { Check } from '../domain/operations/health';

/**
 * Background work on Agenda 6. The job store is PostgreSQL (the service's own database) by default, MongoDB when
 * MONGODB_URL is set; workers never know which. Every worker is retried with jittered exponential backoff,
 * dead-lettered (into PostgreSQL) after its last try, and reports the eight tracked figures.
 */
export interface WorkerDefinition<D = Record<string, unknown>> {
  /** The contract's worker name, e.g. settlement-confirmation-worker. */
  name: string;
  run(data: D): Promise<void>;
  /** Runs on a schedule as well as on demand, e.g. '30 seconds'. */
  every?: string;
  /** With `every`: the first scheduled run comes one interval after start instead of at start. */
  skipImmediate?: boolean;
  concurrency?: number;
  maxRetries?: number;
  /** First retry delay in ms (doubles each try, with jitter). */
  retryDelayMs?: number;
}

export interface JobSystem {
  define<D extends Record<string, unknown>>(worker: WorkerDefinition<D>): void;
  start(): Promise<void>;
  enqueue(name: string, data?: Record<string, unknown>): Promise<void>;
  /** Whether this process runs the background jobs (started, not stopped). */
  isProcessing(): boolean;
  /** Waits for running jobs to finish (up to timeoutMs), then stops. */
  stop(timeoutMs?: number): Promise<void>;
  health(): Promise<Check>;
  refreshQueueMetrics(): Promise<void>;
}

export interface JobSystemOptions {
  databaseUrl: string;
  mongodbUrl: string | null;
  db: Sequelize;
  metrics: JobMetrics;
  logger: Logger;
  /** How often to poll for due jobs (PostgreSQL LISTEN/NOTIFY wakes it sooner). */
  processEvery?: string | number;
  /**
   * How long a job's lock outlives the process that took it (default 30 s, DEFAULT_JOB_LOCK_MS): a process killed
   * while it held a job (running, or locked ahead of its run) frees it within this time, so a recurring worker such
   * as settlement confirmation resumes on the surviving processes. A running job renews its lock every third of it.
   */
  lockLifetimeMs?: number;
}

/** Agenda's own default is 10 minutes: a SIGKILL would stop the confirmation of pending settlements that long. */
export const DEFAULT_JOB_LOCK_MS = 30_000;

/**
 * Runs `work` while renewing the job's lock every third of its lifetime (a run may outlast the lifetime without
 * another process taking the job), and waits for a renewal in flight before returning, so that no renewal lands
 * after Agenda has recorded the run's end (it would lock the finished job again).
 */
async function whileRenewingLock(
  job: Job<Record<string, unknown>>,
  lockLifetimeMs: number,
  work: () => Promise<void>,
): Promise<void> {
  let renewal: Promise<void> = Promise.resolve();
  const heartbeat = setInterval(
    () => {
      renewal = renewal.then(() => job.touch()).catch(() => undefined);
    },
    Math.max(100, Math.floor(lockLifetimeMs / 3)),
  );
  try {
    await work();
  } finally {
    clearInterval(heartbeat);
    await renewal;
  }
}

async function createBackend(opts: JobSystemOptions): Promise<{ backend: AgendaBackend; pool: Pool | null }> {
  if (opts.mongodbUrl) {
    const { MongoBackend } = await import('@agendajs/mongo-backend');
    return { backend: new MongoBackend({ address: opts.mongodbUrl }), pool: null };
  }
  const { PostgresBackend } = await import('@agendajs/postgres-backend');
  // Our own pool, so a connection the server drops (restart, shutdown) is logged instead of crashing the process,
  // and so we close it ourselves after draining.
  const pool = new Pool({ connectionString: opts.databaseUrl, max: 5 });
  pool.on('error', (err) => opts.logger.warn('job backend connection lost', { error: err.message }));
  const backend = new PostgresBackend({ pool, tableName: 'agenda_jobs', channelName: 'agenda_jobs' });
  // The LISTEN connection's loss (a database restart terminates it) is re-emitted by the notification channel, which
  // nobody else listens to: unhandled, that 'error' event would crash the process. The channel reconnects by itself;
  // meanwhile Agenda still polls every `processEvery`.
  backend.notificationChannel?.on('error', (err: Error & { code?: string }) =>
    opts.logger.warn('job notification channel lost its connection; reconnecting', { code: err.code ?? err.name }),
  );
  return { backend, pool };
}

export async function createJobSystem(opts: JobSystemOptions): Promise<JobSystem> {
  const agendaName = `marketplace-${process.pid}`;
  const lockLifetimeMs = opts.lockLifetimeMs ?? DEFAULT_JOB_LOCK_MS;
  const { backend, pool } = await createBackend(opts);
  const newAgenda = () =>
    new Agenda({
      backend,
      name: agendaName,
      processEvery: opts.processEvery ?? '2 seconds',
      defaultLockLifetime: lockLifetimeMs,
      defaultConcurrency: 4,
      removeOnComplete: true,
    });
  // The PostgreSQL backend creates its table on first connect; several processes starting at once would race on
  // CREATE TABLE IF NOT EXISTS, so connecting is serialised with a transaction-scoped advisory lock.
  const agenda = opts.mongodbUrl
    ? newAgenda()
    : await opts.db.transaction(async (transaction) => {
        await opts.db.query('SELECT pg_advisory_xact_lock(815200402)', { transaction });
        const a = newAgenda();
        await a.ready;
        return a;
      });
  const m = opts.metrics;
  const workers: WorkerDefinition<Record<string, unknown>>[] = [];
  let started = false;
  let metricsTimer: NodeJS.Timeout | null = null;

  agenda.on('error', (err) => opts.logger.error('job backend error', { error: err.message }));

  async function deadLetter(name: string, job: Job, error: Error) {
    m.deadLetters.inc({ worker: name });
    opts.logger.error('job dead-lettered', { worker: name, error: error.message });
    await opts.db.query(
      'INSERT INTO dead_letter_jobs (worker, data, error, attempts) VALUES (:worker, :data, :error, :attempts)',
      {
        replacements: {
          worker: name,
          data: JSON.stringify(job.attrs.data ?? {}),
          error: error.message.slice(0, 2000),
          attempts: job.attrs.failCount ?? 0,
        },
      },
    );
  }

  const system: JobSystem = {
    define(worker) {
      const def = worker as unknown as WorkerDefinition<Record<string, unknown>>;
      workers.push(def);
      const maxRetries = def.maxRetries ?? 5;
      agenda.define(
        def.name,
        async (job: Job<Record<string, unknown>>) => {
          m.active.inc({ worker: def.name });
          const end = m.latency.startTimer({ worker: def.name });
          const started = Date.now();
          try {
            await whileRenewingLock(job, lockLifetimeMs, () => def.run(job.attrs.data ?? {}));
            m.completed.inc({ worker: def.name });
            m.lastSuccess.set({ worker: def.name }, Date.now() / 1000);
            opts.logger.debug('job run', { worker: def.name, outcome: 'success', durationMs: Date.now() - started });
          } catch (err) {
            m.failed.inc({ worker: def.name });
            // The error's name only: a message can quote a URL or a value (the dead letter keeps the details).
            opts.logger.debug('job run', {
              worker: def.name,
              outcome: 'failure',
              error: (err as Error)?.name ?? 'Error',
              durationMs: Date.now() - started,
            });
            throw err;
          } finally {
            end();
            m.active.dec({ worker: def.name });
          }
        },
        {
          concurrency: def.concurrency ?? 2,
          backoff: backoffStrategies.exponential({
            delay: def.retryDelayMs ?? 1000,
            maxDelay: 60_000,
            maxRetries,
            jitter: 0.2,
          }),
        },
      );
      agenda.on(`retry:${def.name}`, () => m.retries.inc({ worker: def.name }));
      agenda.on(`retry exhausted:${def.name}`, (error: Error, job) => {
        deadLetter(def.name, job as unknown as Job, error).catch((e: Error) =>
          opts.logger.error('dead-letter write failed', { worker: def.name, error: e.message }),
        );
      });
      // Every series of the eight figures exists at zero from the start, so rates and alerts have something to read.
      for (const label of ['queueDepth', 'active', 'lastSuccess'] as const) m[label].set({ worker: def.name }, 0);
      for (const label of ['completed', 'failed', 'retries', 'deadLetters'] as const)
        m[label].inc({ worker: def.name }, 0);
      m.latency.zero({ worker: def.name });
    },

    async start() {
      await agenda.start();
      started = true;
      for (const w of workers)
        if (w.every)
          await agenda.every(w.every, w.name, undefined, w.skipImmediate ? { skipImmediate: true } : undefined);
      await system.refreshQueueMetrics();
      metricsTimer = setInterval(() => void system.refreshQueueMetrics().catch(() => undefined), 5000);
      metricsTimer.unref();
    },

    async enqueue(name, data = {}) {
      await agenda.now(name, data);
    },

    isProcessing() {
      return started;
    },

    async stop(timeoutMs = 20_000) {
      if (metricsTimer) clearInterval(metricsTimer);
      if (started) {
        started = false;
        await agenda.drain({ timeout: timeoutMs, closeConnection: true });
        // drain() waits for running jobs but leaves jobs this process had locked and not started (or locked by a
        // query that finished during the drain) locked until their lock lifetime ends: release them, so another
        // process takes them at once. A job still running past the timeout is released too; workers are idempotent.
        if (pool && !pool.ended)
          await pool
            .query('UPDATE agenda_jobs SET locked_at = NULL WHERE locked_at IS NOT NULL AND last_modified_by = $1', [
              agendaName,
            ])
            .catch(() => undefined);
      } else {
        // Never started (enqueue-only, e.g. an API-only process): still close the backend's connections.
        await agenda.ready.catch(() => undefined);
        await backend.disconnect().catch(() => undefined);
      }
      if (pool && !pool.ended) await pool.end();
    },

    async health() {
      if (!started)
        return {
          status: 'degraded',
          reason: 'JOBS_NOT_RUNNING',
          message: 'This process does not process background jobs.',
        };
      const t = Date.now();
      try {
        await agenda.getJobsOverview();
        return { status: 'ok', latencyMs: Date.now() - t };
      } catch (err) {
        // A fixed message: the raw error can name hosts or connection strings.
        opts.logger.warn('job backend health check failed', { reason: 'JOB_BACKEND_UNREACHABLE' });
        return {
          status: 'down',
          latencyMs: Date.now() - t,
          reason: 'JOB_BACKEND_UNREACHABLE',
          message: 'The job store does not answer.',
        };
      }
    },

    async refreshQueueMetrics() {
      if (!started) return;
      const overview = await agenda.getJobsOverview();
      for (const w of workers) {
        const row = overview.find((o) => o.name === w.name);
        m.queueDepth.set({ worker: w.name }, row ? row.queued : 0);
      }
    },
  };
  return system;
}
