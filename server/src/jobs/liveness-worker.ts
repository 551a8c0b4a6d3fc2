import type { WorkerDefinition } from './job-system';
import type { LivenessRunner } from '../domain/trust/liveness-runner';
import type { Logger } from '../logger';

export const LIVENESS_WORKER = 'liveness-worker';

/**
 * Every minute (issue #33): one liveness pass (domain/trust/liveness-runner.ts): claims the listed resources due for
 * a probe, at most the configured probes per minute, one probe per host per interval, never paying, and writes the
 * outcomes in batches under their claim; the decoy price flags every 5 minutes. One pass at a time across processes
 * (Agenda's lock); passes that overlap anyway (a lock that expired) probe disjoint claims.
 */
export function createLivenessWorker(deps: {
  runner: LivenessRunner;
  every?: string;
  logger: Logger;
}): WorkerDefinition {
  return {
    name: LIVENESS_WORKER,
    every: deps.every ?? '1 minute',
    maxRetries: 1,
    concurrency: 1,
    async run() {
      const r = await deps.runner.pass(60_000);
      if (r.probed && r.drifted)
        deps.logger.warn('listings drifted from their live 402', { probed: r.probed, drifted: r.drifted });
    },
  };
}
