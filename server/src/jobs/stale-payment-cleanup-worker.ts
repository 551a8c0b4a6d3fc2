import type { WorkerDefinition } from './job-system';
import type { AttemptRepository, LedgerPort } from '../domain/facilitator/types';
import type { Logger } from '../logger';
import { DEFAULT_ABANDONED_CLAIM_SECONDS, DEFAULT_STALE_CLEANUP_SECONDS } from '../domain/defaults';

/**
 * Owner of the attempts nothing else moves on:
 * - verified attempts whose authorization expired (expiresAtLedger < latest ledger) -> expired;
 * - attempts claimed for settlement (settlement_pending) that never got their settlement row within
 *   `abandonedClaimSeconds` (an error or a crash between the claim and the pending settlement) -> settlement_failed.
 *   Safe: the settlement row is written before any submission, and that write re-checks the claim, so none of them
 *   can reach the ledger. Pending settlements belong to the settlement-confirmation worker.
 */
export function stalePaymentCleanupWorker(deps: {
  attempts: Pick<AttemptRepository, 'failAbandonedClaims' | 'expireStale'>;
  ledger: LedgerPort;
  networks(): string[];
  logger: Logger;
  abandonedClaimSeconds?: number;
  every?: string;
}): WorkerDefinition<{ abandonedClaimSeconds?: number }> {
  return {
    name: 'stale-payment-cleanup-worker',
    every: deps.every ?? `${DEFAULT_STALE_CLEANUP_SECONDS} seconds`,
    concurrency: 1,
    maxRetries: 3,
    async run(data) {
      const abandoned = await deps.attempts.failAbandonedClaims(
        data?.abandonedClaimSeconds ?? deps.abandonedClaimSeconds ?? DEFAULT_ABANDONED_CLAIM_SECONDS,
        500,
      );
      if (abandoned > 0) deps.logger.warn('abandoned settlement claims failed (nothing was submitted)', { abandoned });
      for (const network of deps.networks()) {
        const latest = await deps.ledger.latestLedger(network);
        const expired = await deps.attempts.expireStale(network, latest);
        if (expired > 0) deps.logger.info('stale payment attempts expired', { network, expired, latestLedger: latest });
      }
    },
  };
}
