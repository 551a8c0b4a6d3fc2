import type { WorkerDefinition } from './job-system';
import type { PaymentRepository } from '../domain/facilitator/types';

/** Makes sure every settled attempt has a settled receipt (idempotent upsert from the settlement). */
export function receiptFinalizerWorker(deps: {
  repo: PaymentRepository;
  versionAtSettlement(resourceId: string): Promise<string | null>;
  every?: string;
}): WorkerDefinition<Record<string, never>> {
  return {
    name: 'receipt-finalizer-worker',
    every: deps.every ?? '30 seconds',
    concurrency: 1,
    maxRetries: 3,
    async run() {
      for (const { attempt, settlement } of await deps.repo.settledWithoutSettledReceipt(200)) {
        if (!attempt.resourceId) continue;
        const existing = await deps.repo.findReceiptByAttempt(attempt.id);
        const versionId = existing?.versionId ?? attempt.versionId ?? (await deps.versionAtSettlement(attempt.resourceId));
        if (!versionId) continue;
        await deps.repo.upsertSettledReceipt(attempt, settlement, versionId);
      }
    },
  };
}
