import cluster, { type Worker } from 'node:cluster';
import type { Config } from './config';
import type { Logger } from './logger';

/**
 * WEB_CONCURRENCY > 1: this process becomes the primary of a node:cluster and runs that many service processes
 * (workers: the same main.ts), which share the listening port (the primary accepts and hands connections out). One
 * Node process uses one core; verify is CPU-bound in the service (scripts/bench/PROFILE.md), so several processes
 * use the machine's other cores.
 *
 * Nothing payment-related is shared in memory: the processes already share limits, channel leases, replay state,
 * idempotency keys and jobs through the database (compare-and-set and unique indexes, never in-process locks), as
 * separate servers behind a load balancer would. The primary applies the migrations and creates the generated key
 * files once (`prepare`) before the workers start, so they never race on them; each worker runs the jobs as a
 * single process does (Agenda locks jobs in the database).
 *
 * The embedded PostgreSQL (DATABASE_URL unset) and the in-process local network (LOCAL_NETWORK on) belong to the
 * primary, which starts them before the workers and stops them after the last worker has stopped; each worker is
 * handed their addresses (DATABASE_URL, LOCAL_NETWORK_PRIMARY_RPC_URL in its environment) and connects to them as
 * it would to external ones. So `npm start` with WEB_CONCURRENCY=2 uses two cores with nothing else configured.
 *
 * A worker that exits unexpectedly is replaced (at most once per second). SIGTERM/SIGINT on the primary stop the
 * workers gracefully (each drains its requests and jobs, as a single process does) and then the primary.
 */
export function clusterWanted(config: Config): boolean {
  return config.webConcurrency > 1 && cluster.isPrimary;
}

export interface ClusterPrimaryOptions {
  /** The database every worker connects to (the external one, or the embedded one the primary started). */
  databaseUrl: string;
  /** The RPC of the local network the primary runs, or null when it runs none. */
  localNetworkRpcUrl: string | null;
  /** Runs once before the first worker starts (generated key files). */
  prepare: () => Promise<void>;
  /** Stops what the primary owns (local network, embedded database), after the last worker has stopped. */
  stopOwned: () => Promise<void>;
}

export async function runClusterPrimary(config: Config, logger: Logger, opts: ClusterPrimaryOptions): Promise<void> {
  await opts.prepare();
  const workerEnv: Record<string, string> = { DATABASE_URL: opts.databaseUrl };
  if (opts.localNetworkRpcUrl) workerEnv.LOCAL_NETWORK_PRIMARY_RPC_URL = opts.localNetworkRpcUrl;

  let lastFork = 0;
  const fork = (): Worker => cluster.fork(workerEnv);
  for (let i = 0; i < config.webConcurrency; i++) fork();
  lastFork = Date.now();
  logger.info('service processes started', { processes: config.webConcurrency });

  let stopping = false;
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    logger.error('a service process exited; starting another', { pid: worker.process.pid, code, signal });
    const wait = Math.max(0, lastFork + 1000 - Date.now());
    setTimeout(() => {
      if (stopping) return;
      lastFork = Date.now();
      fork();
    }, wait);
  });

  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down the service processes', { signal });
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    const forced = setTimeout(() => {
      logger.error('shutdown timed out; exiting');
      for (const w of workers) w.process.kill('SIGKILL');
      process.exit(1);
    }, 30_000);
    forced.unref();
    let failed = false;
    void Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            w.once('exit', (code) => {
              if (code !== 0) failed = true;
              resolve();
            });
            w.process.kill(signal);
          }),
      ),
    )
      .then(() => opts.stopOwned())
      .catch((err: unknown) => {
        failed = true;
        logger.error('stopping the local network or the embedded database failed', { error: (err as Error).message });
      })
      .then(() => {
        logger.info('stopped');
        process.exit(failed ? 1 : 0);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
