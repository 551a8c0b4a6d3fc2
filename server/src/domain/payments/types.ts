import type { Page } from '../pagination';
import type { Stroops } from '../amount';

export const PAYMENT_STATUSES = [
  'created',
  'verified',
  'verification_failed',
  'settlement_pending',
  'settled',
  'settlement_failed',
  'expired',
  'replayed',
  'cancelled',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** What a settlement or receipt proves; the contract's EvidenceLabel enum. */
export type EvidenceLabel =
  | 'local_simulation'
  | 'testnet_verification'
  | 'testnet_settlement'
  | 'mainnet_verification'
  | 'mainnet_settlement'
  | 'failed_settlement'
  | 'pending_settlement';

export interface PaymentAttempt {
  id: string;
  resourceId: string | null;
  versionId: string | null;
  sellerId: string | null;
  paymentHash: string;
  network: string;
  payer: string;
  assetCode: string;
  assetIssuer: string;
  amount: Stroops;
  payTo: string;
  status: PaymentStatus;
  failureCode: string | null;
  failureReason: string | null;
  expiresAtLedger: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface PaymentFilters {
  resourceId?: string;
  sellerId?: string;
  network?: string;
  asset?: string;
  status?: PaymentStatus;
}

export interface PaymentReadRepository {
  list(filters: PaymentFilters, afterId: string | null, limit: number): Promise<Page<PaymentAttempt>>;
}
