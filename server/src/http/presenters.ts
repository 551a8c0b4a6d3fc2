import type { components } from '../generated/openapi';
import type { Resource, ResourceVersion } from '../domain/catalog/types';
import type { ResourceDetail } from '../domain/catalog/resource-service';
import type { SellerView, DomainVerificationView } from '../domain/sellers/seller-service';
import type { PaymentAttempt } from '../domain/payments/types';
import type { Page } from '../domain/pagination';
import { formatAmount } from '../domain/amount';

/** Domain objects -> the contract's JSON shapes. The compiler checks each against the generated schema types. */
type S = components['schemas'];

const iso = (d: Date): string => d.toISOString();
const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

/** The fields every listing shows, the same way in the catalog (Resource) and in discovery (DiscoveryResource). */
export function presentListingFields(r: Pick<Resource, keyof S['DiscoveryResource'] & keyof Resource>) {
  return {
    id: r.id,
    sellerId: r.sellerId,
    type: r.type,
    name: r.name,
    description: r.description,
    url: r.url,
    routeTemplate: r.routeTemplate,
    network: r.network as S['Network'],
    payTo: r.payTo,
    assetCode: r.assetCode,
    assetIssuer: r.assetIssuer,
    amount: formatAmount(r.amount),
    status: r.status,
  };
}

export function presentResource(r: Resource): S['Resource'] {
  return {
    ...presentListingFields(r),
    inputSchema: r.inputSchema,
    outputSchema: r.outputSchema,
    extensions: r.extensions,
    versionId: r.versionId,
    version: r.version,
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
  };
}

export function presentResourceDetail(r: ResourceDetail): S['ResourceDetail'] {
  return {
    ...presentResource(r),
    paymentRequirements: {
      ...r.paymentRequirements,
      network: r.paymentRequirements.network as S['Network'],
      amount: formatAmount(r.paymentRequirements.amount),
    },
    sellerTrust: { ...r.sellerTrust, domainVerifiedAt: isoOrNull(r.sellerTrust.domainVerifiedAt) },
    settlementStats: { ...r.settlementStats, lastSettledAt: isoOrNull(r.settlementStats.lastSettledAt) },
  };
}

export function presentVersion(v: ResourceVersion): S['ResourceVersion'] {
  const { sellerDomain: _d, createdAt, network, amount, ...rest } = v;
  return { ...rest, network: network as S['Network'], amount: formatAmount(amount), createdAt: iso(createdAt) };
}

export function presentSeller(s: SellerView): S['Seller'] {
  return {
    id: s.id,
    displayName: s.displayName,
    walletAddress: s.walletAddress,
    domain: s.domain,
    domainVerifiedAt: isoOrNull(s.domainVerifiedAt),
    verificationStatus: s.verificationStatus,
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}

export function presentDomainVerification(v: DomainVerificationView): S['DomainVerification'] {
  return {
    sellerId: v.sellerId,
    domain: v.domain,
    status: v.status,
    token: v.token,
    methods: v.methods,
    checkedMethod: v.checkedMethod,
    failureReason: v.failureReason,
    domainVerifiedAt: isoOrNull(v.domainVerifiedAt),
    expiresAt: iso(v.expiresAt),
  };
}

export function presentPayment(p: PaymentAttempt): S['PaymentAttempt'] {
  return {
    id: p.id,
    resourceId: p.resourceId,
    sellerId: p.sellerId,
    versionId: p.versionId,
    paymentHash: p.paymentHash,
    network: p.network as S['Network'],
    payer: p.payer,
    assetCode: p.assetCode,
    assetIssuer: p.assetIssuer,
    amount: formatAmount(p.amount),
    payTo: p.payTo,
    status: p.status,
    failureCode: p.failureCode as S['PaymentAttempt']['failureCode'],
    failureReason: p.failureReason,
    expiresAtLedger: p.expiresAtLedger,
    createdAt: iso(p.createdAt),
    updatedAt: iso(p.updatedAt),
  };
}

export function presentPage<T, U>(page: Page<T>, present: (t: T) => U): { items: U[]; nextCursor: string | null } {
  return { items: page.items.map(present), nextCursor: page.nextCursor };
}
