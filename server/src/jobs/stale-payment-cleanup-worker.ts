import type { WorkerDefinition } from './job-system';
import type { LedgerPort, PaymentRepository } from '../domain/facilitator/types';
import type { Logger } from '../logger';

/** Moves verified attempts whose authorization expired (expiresAtLedger < latest ledger) to expired. */
export function stalePaymentCleanupWorker(deps: {
  repo: PaymentRepository;
  ledger: LedgerPort;
  networks(): string[];
  logger: Logger;
  every?: string;
}): WorkerDefinition<Record<string, never>> {
  return {
    name: 'stale-payment-cleanup-worker',
    every: deps.every ?? '1 minute',
    concurrency: 1,
    maxRetries: 3,
    async run() {
      for (const network of deps.networks()) {
        const latest = await deps.ledger.latestLedger(network);
        const expired = await deps.repo.expireStale(network, latest);
        if (expired > 0) deps.logger.info('stale payment attempts expired', { network, expired, latestLedger: latest });
      }
    },
  };
}
