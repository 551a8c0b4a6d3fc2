import type { SellerService } from '../../domain/sellers/seller-service';
import type { KeyService } from '../../domain/sellers/key-service';
import type { ResourceService } from '../../domain/catalog/resource-service';
import type { PaymentReadService } from '../../domain/payments/payment-read-service';
import type { HealthReport } from '../../domain/operations/health';
import type { NetworkRegistry } from '../../domain/network-registry';
import type { Metrics } from '../../metrics/registry';
import type { SellerReceiptKeyService } from '../../domain/sellers/seller-receipt-keys';

export interface HandlerDeps {
  sellers: SellerService;
  keys: KeyService;
  resources: ResourceService;
  payments: PaymentReadService;
  networks: NetworkRegistry;
  metrics: Metrics;
  health(): Promise<HealthReport>;
  version: { version: string; commit: string | null; contractVersion: string };
  sellerReceiptKeys: SellerReceiptKeyService;
}
