import type { WorkerDefinition } from './job-system';
import type { SettlementRecord, SettlementRepository } from '../domain/facilitator/types';
import type { Logger } from '../logger';

/**
 * Finishes settlements left pending (a crash between submit and record, or a confirmation that outlived the
 * request): asks the ledger for each pending settlement older than `olderThanSeconds` and records settled/failed.
 * It never resubmits; a transaction still NOT_FOUND after its authorization expired can never apply, so it is failed.
 * Recording the final answer also frees the channel account pinned to that transaction in the shared lease table
 * (channel_leases), so a channel whose last transaction's fate was unknown is handed out again only after this.
 * Any process may run it: the final writes are compare-and-set on the pending settlement.
 */
export function settlementConfirmationWorker(deps: {
  settlements: Pick<SettlementRepository, 'pendingSettlements'>;
  confirmOnce(s: SettlementRecord): Promise<'settled' | 'failed' | 'pending' | 'reconcile'>;
  logger: Logger;
  olderThanSeconds: number;
  every?: string;
}): WorkerDefinition<{ olderThanSeconds?: number }> {
  return {
    name: 'settlement-confirmation-worker',
    every: deps.every ?? '5 seconds',
    concurrency: 1,
    maxRetries: 3,
    async run(data) {
      const pending = await deps.settlements.pendingSettlements(data.olderThanSeconds ?? deps.olderThanSeconds, 200);
      for (const s of pending) {
        try {
          const state = await deps.confirmOnce(s);
          if (state !== 'pending')
            deps.logger.info('settlement confirmed by worker', { settlementId: s.id, network: s.network, state });
        } catch (err) {
          deps.logger.warn('settlement confirmation deferred', {
            settlementId: s.id,
            network: s.network,
            error: (err as Error).message,
          });
        }
      }
    },
  };
}
