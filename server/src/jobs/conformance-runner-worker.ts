import type { WorkerDefinition } from './job-system';
import type { ConformanceRunner } from '../domain/conformance/runner';
import type { ConformanceRunStore } from '../domain/conformance/types';

export const CONFORMANCE_RUNNER_WORKER = 'conformance-runner-worker';

/**
 * Hourly (configurable) and on demand (POST /v1/conformance/runs enqueues it with the queued run ids): runs the
 * facilitator conformance suite per network and probes cataloged http resources. A failed check is a result
 * (stored, counted, alerted on), not a job failure; a run left queued or running by a dead process is marked failed.
 */
export function conformanceRunnerWorker(deps: {
  runner: ConformanceRunner;
  store: ConformanceRunStore;
  every?: string;
  runAtStart?: boolean;
}): WorkerDefinition<{ runIds?: string[] }> {
  return {
    name: CONFORMANCE_RUNNER_WORKER,
    every: deps.every ?? '1 hour',
    skipImmediate: !deps.runAtStart,
    concurrency: 1,
    maxRetries: 2,
    async run(data) {
      await deps.store.recoverStuckRuns(3600);
      const ids = data.runIds ?? (await deps.runner.queue('schedule')).map((r) => r.id);
      for (const id of ids) await deps.runner.execute(id);
    },
  };
}
