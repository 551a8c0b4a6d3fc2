import type { WorkerDefinition } from './job-system';
import type { ReceiptRepository } from '../domain/facilitator/types';

/**
 * Makes sure every settled attempt has a settled receipt (idempotent upsert from the settlement). The receipt pins
 * the resource version the payment was checked against: the existing receipt's, else the attempt's (set at the
 * claim), else the version that was current when the settlement was written, never the one current now; a payment
 * settled without a resource (an uncataloged x402 URL) gets a receipt without resource and version.
 */
export function receiptFinalizerWorker(deps: {
  receipts: ReceiptRepository;
  versionAtSettlement(resourceId: string, at: Date): Promise<string | null>;
  every?: string;
}): WorkerDefinition<Record<string, never>> {
  return {
    name: 'receipt-finalizer-worker',
    every: deps.every ?? '30 seconds',
    concurrency: 1,
    maxRetries: 3,
    async run() {
      for (const { attempt, settlement } of await deps.receipts.settledWithoutSettledReceipt(200)) {
        // An uncataloged x402 payment has no resource and so no version: its receipt has none either.
        if (!attempt.resourceId) {
          await deps.receipts.upsertSettledReceipt(attempt, settlement, null);
          continue;
        }
        const existing = await deps.receipts.findReceiptByAttempt(attempt.id);
        const versionId =
          existing?.versionId ??
          attempt.versionId ??
          (await deps.versionAtSettlement(attempt.resourceId, settlement.createdAt));
        if (!versionId) continue;
        await deps.receipts.upsertSettledReceipt(attempt, settlement, versionId);
      }
    },
  };
}
