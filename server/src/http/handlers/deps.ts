import type { SellerService } from '../../domain/sellers/seller-service';
import type { KeyService } from '../../domain/sellers/key-service';
import type { SellerReceiptKeyService } from '../../domain/sellers/seller-receipt-keys';
import type { ResourceService } from '../../domain/catalog/resource-service';
import type { PaymentReadService } from '../../domain/payments/payment-read-service';
import type { DiscoveryService } from '../../domain/discovery/discovery-service';
import type { TrustService } from '../../domain/trust/trust-service';
import type { Bazaar } from '../../domain/discovery/bazaar';
import type { FacilitatorService } from '../../domain/facilitator/facilitator-service';
import type { PaymentIdentifiers } from '../../domain/facilitator/payment-identifier';
import type { SignedReceipts } from '../../domain/receipts/signed-receipts';
import type { ConformanceRunner } from '../../domain/conformance/runner';
import type { ConformanceRunStore, ResourceConformance } from '../../domain/conformance/types';
import type { OperationsDashboard } from '../../domain/operations/dashboard';
import type { HealthReport } from '../../domain/operations/health';
import type { NetworkRegistry } from '../../domain/network-registry';
import type { Metrics } from '../../metrics/registry';

/** The services the handlers call: every operation's handler reaches its use case in one hop (compose.ts builds them).
 * */
export interface HandlerServices {
  sellers: SellerService;
  keys: KeyService;
  sellerReceiptKeys: SellerReceiptKeyService;
  resources: ResourceService;
  /** The per-resource conformance state GET /v1/resources/{id} shows. */
  resourceConformance(resourceId: string): Promise<ResourceConformance>;
  /** Trust signals (issue #33): the block reads show, and the seller's confirmation of changed terms. */
  trust: TrustService;
  payments: PaymentReadService;
  discovery: DiscoveryService;
  /** The Bazaar that learns (absent: the x402 Bazaar list shows cataloged resources only). */
  bazaar?: Bazaar;
  facilitator: FacilitatorService;
  /** The facilitator's own addresses on a network (channels, fee account): /x402/supported's signers. */
  facilitatorAddresses(network: string): Iterable<string>;
  /** x402 payment-identifier idempotency for /x402/verify and /x402/settle (absent: the extension is not honoured). */
  paymentIdentifiers?: PaymentIdentifiers;
  /** Attestations of settled receipts, and the key set that verifies them. */
  receipts: SignedReceipts;
  conformance: { runner: ConformanceRunner; store: ConformanceRunStore; enqueueRuns(runIds: string[]): Promise<void> };
  dashboard: Pick<OperationsDashboard, 'stats' | 'dashboard'>;
  networks: NetworkRegistry;
  metrics: Metrics;
  health(): Promise<HealthReport>;
  version: { version: string; commit: string | null; contractVersion: string };
}
