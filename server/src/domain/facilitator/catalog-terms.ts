import { DomainError } from '../errors';
import { formatAmount } from '../amount';
import type { Principal } from '../auth/principal';
import type { SellerRepository } from '../sellers/types';
import { RULES } from './rules/catalog';
import { ensure, refuse } from './rules/rule';
import { resolveAsset, type NetworkLookup, type PaymentRequirementsInput } from './check-payment';
import type { ResourceTermsRef, ResourceTermsRepository } from './types';

/**
 * Catalog terms on every entrance (issue #29): a payment that names a cataloged resource (its id on /v1, its URL on
 * /x402, the paid MCP tool through either) is verified and settled against that resource's CURRENT amount, asset,
 * network and payTo, whoever calls. Requirements that state other terms are refused with the rule that fits
 * (AMOUNT_MISMATCH, ASSET_MISMATCH, RECIPIENT_MISMATCH, UNSUPPORTED_NETWORK), and such a payment is never linked to
 * the resource: not in settlements, receipts, attestations nor stats. Used by verify and settle alike, so whatever
 * settle refuses on these grounds, verify refuses with the same reason.
 */

export interface CatalogDeps {
  resources: Pick<ResourceTermsRepository, 'resourceRef' | 'findResourceByUrl'>;
  sellers: Pick<SellerRepository, 'sellerIdByWallet'>;
  /** The configured networks: a URL is looked up only on a network served; a resource's asset is resolved here. */
  networks: Pick<NetworkLookup, 'get' | 'asset'>;
}

export interface CatalogQuestion {
  resourceId?: string | null;
  /** The requirements the caller states (/v1/verify, /x402); /v1/settle may give none. */
  requirements?: PaymentRequirementsInput;
  /** Configured networks: a URL is looked up only on a network this facilitator serves. */
  networkKnown(network: string): boolean;
  principal?: Principal;
}

export interface CatalogAnswer {
  /** The terms the payment is judged against: the resource's when it names one, else the caller's. */
  req: PaymentRequirementsInput;
  resource: ResourceTermsRef | null;
}

/** The resource's current terms as requirements (the caller's maxTimeoutSeconds kept: the expiry rule caps it). */
export function termsOf(
  networks: Pick<NetworkLookup, 'asset'>,
  r: ResourceTermsRef,
  maxTimeoutSeconds?: number,
): PaymentRequirementsInput {
  return {
    scheme: 'exact',
    network: r.network,
    amount: r.amount,
    payTo: r.payTo,
    asset: resolveAsset(networks, r.network, r.assetCode, r.assetIssuer),
    ...(maxTimeoutSeconds ? { maxTimeoutSeconds } : {}),
  };
}

/** The requirements a caller states must be the cataloged resource's current terms (one named rule each). */
export function checkCatalogTerms(r: ResourceTermsRef, req: PaymentRequirementsInput): void {
  ensure(RULES.catalogNetwork, r.network === req.network, `The resource is sold on ${r.network}, not ${req.network}`);
  ensure(
    RULES.catalogAmount,
    req.amount === r.amount,
    `The resource's current price is ${formatAmount(r.amount)} ${r.assetCode}; requirements for ` +
      `${formatAmount(req.amount)} are not its terms`,
  );
  ensure(RULES.catalogPayTo, r.payTo === req.payTo, "The requirements' payTo is not the resource's payTo");
  ensure(
    RULES.catalogAsset,
    !req.asset || (req.asset.code === r.assetCode && req.asset.issuer === r.assetIssuer),
    `The resource is sold in ${r.assetCode}`,
  );
}

/**
 * The terms a payment is judged against, and the cataloged resource it is linked to (or none). A URL cataloged only
 * with another payTo is a stranger's listing: anonymous requirements naming it are refused (RECIPIENT_MISMATCH);
 * the seller who owns the requirements' payTo (its key) or the operator may still settle its own uncataloged payment,
 * which is then linked to nothing.
 */
export async function resolveCatalogTerms(deps: CatalogDeps, q: CatalogQuestion): Promise<CatalogAnswer> {
  const req = q.requirements;
  if (q.resourceId) {
    const resource = await deps.resources.resourceRef(q.resourceId);
    if (!resource) throw new DomainError('RESOURCE_NOT_FOUND', `No resource with id ${q.resourceId}`);
    if (req) checkCatalogTerms(resource, req);
    return { req: termsOf(deps.networks, resource, req?.maxTimeoutSeconds), resource };
  }
  if (!req)
    throw new DomainError('INVALID_PAYMENT_PAYLOAD', 'Settle needs the payment requirements or a cataloged resource');
  if (!req.resource || !q.networkKnown(req.network)) return { req, resource: null };
  const found = await deps.resources.findResourceByUrl(req.network, req.payTo, req.resource);
  if (found.resource) {
    checkCatalogTerms(found.resource, req);
    return { req: termsOf(deps.networks, found.resource, req.maxTimeoutSeconds), resource: found.resource };
  }
  if (found.listedWithOtherPayTo && !(await ownsPayTo(deps, q.principal, req.payTo))) {
    throw refuse(
      RULES.catalogPayTo,
      `${req.resource} is cataloged with another payTo: a payment for it must pay the listed seller`,
    );
  }
  return { req, resource: null };
}

async function ownsPayTo(deps: CatalogDeps, principal: Principal | undefined, payTo: string): Promise<boolean> {
  if (principal?.role === 'operator') return true;
  if (principal?.role !== 'seller') return false;
  return (await deps.sellers.sellerIdByWallet(payTo)) === principal.sellerId;
}

/** The cataloged resource a payment is for, the terms it is judged against, and the seller accountable for it. */
export interface AccountableParty extends CatalogAnswer {
  /** The resource's seller, else the seller whose wallet is the payTo (null: none). */
  sellerId: string | null;
  /**
   * The seller a verify's record is attributed to: the resource's, else the payTo's seller only when that seller (its
   * key) or the operator asks. An anonymous verify never writes into a seller's payment list (issue #29).
   */
  attributed: string | null;
}

/**
 * Finds the resource and the accountable seller, for verify and settle alike: the cataloged resource the payment
 * names (by id, else by URL; its current terms replace the caller's, which must equal them) and the seller it is
 * charged to. Judges nothing about the seller: verify and settle each say when a payment has nobody accountable.
 */
export async function findAccountableParty(
  deps: CatalogDeps,
  q: { resourceId?: string | null; paymentRequirements?: PaymentRequirementsInput; principal?: Principal },
): Promise<AccountableParty> {
  const { req, resource } = await resolveCatalogTerms(deps, {
    resourceId: q.resourceId,
    requirements: q.paymentRequirements,
    networkKnown: (n) => deps.networks.get(n) !== undefined,
    principal: q.principal,
  });
  const sellerId = resource?.sellerId ?? (await deps.sellers.sellerIdByWallet(req.payTo));
  const asker = q.principal;
  const attributed = resource
    ? resource.sellerId
    : asker?.role === 'operator' || (asker?.role === 'seller' && asker.sellerId === sellerId)
      ? sellerId
      : null;
  return { req, resource, sellerId, attributed };
}

/**
 * The seller a settlement is charged to (none: PAYEE_NOT_SELLER). A payment for a URL that is not cataloged is
 * settled only when that seller asks (its key) or the operator does. Settle and /x402 verify both apply it, so verify
 * never says yes to what settle refuses.
 */
export function accountableSeller(party: AccountableParty, principal: Principal | undefined): string {
  ensure(
    RULES.payeeIsSeller,
    party.sellerId !== null,
    'The payTo belongs to no signed-up seller: nobody accountable asked for this settlement',
  );
  requireSellerAsked(party.resource, party.sellerId!, principal);
  return party.sellerId!;
}

/** Without a cataloged resource, only the payTo's seller (its key) or the operator may ask (the check, its seller
 * known). */
export function requireSellerAsked(
  resource: ResourceTermsRef | null,
  sellerId: string,
  principal: Principal | undefined,
): void {
  if (resource || principal?.role === 'operator') return;
  ensure(
    RULES.sellerAsked,
    principal?.role === 'seller',
    'Settling a payment for a URL that is not cataloged needs the API key of the seller it pays',
  );
  ensure(
    RULES.sellerKeyMatches,
    principal?.role === 'seller' && principal.sellerId === sellerId,
    'This API key belongs to another seller than the one this payment pays',
  );
}
