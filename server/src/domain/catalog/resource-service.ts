import { DomainError, notFound, type ErrorDetail } from '../errors';
import { newId } from '../ids';
import { normalizeAmount, type Stroops } from '../amount';
import { MAX_TIMEOUT_SECONDS } from '../defaults';
import { assertActsFor, type Principal } from '../auth/principal';
import { decodeCursor, pageLimit, type Page, type PageRequest } from '../pagination';
import type { NetworkRegistry, RegisteredAsset } from '../network-registry';
import type { Seller } from '../sellers/types';
import { resourceOwnershipIssues } from './catalog-rules';
import { needsTrustline, readinessWarnings, type WalletStateReader } from './payto-readiness';
import { isPayToAddress } from '../network-registry';
import {
  checkResourceTerms,
  listedTerms,
  submittedTerms,
  type ResourceTerms,
  type RuleResult,
  type ValidationIssue,
} from './resource-rules';
import type { Resource, ResourceFilters, ResourceRepository, ResourceVersion, SettlementStats } from './types';
import { guardDuplicateEndpoint } from './endpoint';
import { TERM_FIELDS, sameJson, type TermField } from './term-fields';

export interface ResourceDetail extends Resource {
  paymentRequirements: {
    scheme: 'exact';
    network: string;
    amount: Stroops;
    payTo: string;
    /** The registered asset, or (removed from configuration since) its code and issuer with an empty contract id. */
    asset: RegisteredAsset | { code: string; issuer: string; contractId: '' };
    maxTimeoutSeconds: number;
    resource: string;
  };
  sellerTrust: {
    sellerId: string;
    displayName: string;
    domain: string;
    domainVerified: boolean;
    domainVerifiedAt: Date | null;
    trusted: boolean;
  };
  settlementStats: SettlementStats;
}

export interface ResourceServiceDeps {
  resources: ResourceRepository;
  findSeller(sellerId: string): Promise<Seller | null>;
  networks: NetworkRegistry;
  /** Called after every catalog change so the search index can be refreshed (queues indexing). */
  onCatalogChange?: (resourceId: string) => void | Promise<void>;
  onValidationFailure?: (issues: ValidationIssue[]) => void;
  /** FACILITATOR_MIN_AMOUNT: create and update refuse a price below it. */
  minimumStroops?: Stroops;
  /** Seller readiness: the payTo wallet's account and trustline on the ledger (null: cannot tell now). */
  walletState?: WalletStateReader;
}

/** Throws the issues of a failed rule check as one error: their shared code, or CATALOG_VALIDATION_FAILED. */
export function throwIfInvalid(result: RuleResult): void {
  if (result.errors.length === 0) return;
  const codes = new Set(result.errors.map((e) => e.code));
  const code = codes.size === 1 ? result.errors[0].code : 'CATALOG_VALIDATION_FAILED';
  const details: ErrorDetail[] = result.errors.map((e) => ({ field: e.field, message: e.message, code: e.code }));
  throw new DomainError(
    code,
    `The resource is not valid: ${result.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`,
    details,
  );
}

export function createResourceService(deps: ResourceServiceDeps) {
  const { resources, networks } = deps;
  const findEndpoint = (sellerId: string, url: string, method: string) =>
    resources.findActiveEndpoint(sellerId, url, method);

  async function sellerFor(sellerId: string): Promise<Seller> {
    const seller = await deps.findSeller(sellerId);
    if (!seller) throw notFound('seller', sellerId);
    return seller;
  }

  function check(terms: ResourceTerms, seller: Seller): ValidationIssue[] {
    const result = checkResourceTerms(terms, {
      networks,
      seller: { id: seller.id, walletAddress: seller.walletAddress, domainVerified: seller.domainVerifiedAt !== null },
      trusted: false,
      minimumStroops: deps.minimumStroops,
    });
    // Same ownership rules as the catalog (catalog-rules.ts): the seller's domain and the seller's own wallet.
    result.errors.push(
      ...resourceOwnershipIssues(terms, seller).filter((i) => !result.errors.some((e) => e.field === i.field)),
    );
    result.warnings = result.warnings.filter((w) => w.field !== 'payTo');
    if (result.errors.length) deps.onValidationFailure?.(result.errors);
    throwIfInvalid(result);
    return result.warnings;
  }

  /** What `create` warns about (issue 32): the payTo wallet that cannot receive the asset yet, as validate says it. */
  async function readiness(terms: ResourceTerms): Promise<ValidationIssue[]> {
    const asset = networks.asset(terms.network, terms.assetCode, terms.assetIssuer);
    if (!asset || !deps.walletState || !isPayToAddress(terms.payTo) || !needsTrustline(terms.payTo, asset)) return [];
    const state = await deps.walletState(terms.network, terms.payTo, asset).catch(() => null);
    return readinessWarnings(state, { network: terms.network, payTo: terms.payTo, asset, fieldPrefix: '' });
  }

  async function load(id: string): Promise<Resource> {
    const resource = await resources.findById(id);
    if (!resource) throw notFound('resource', id);
    return resource;
  }

  function versionOf(r: Resource, seller: Seller, versionId: string, at: Date): ResourceVersion {
    const {
      type: _t,
      id: _id,
      sellerId: _s,
      versionId: _v,
      version,
      status: _st,
      createdAt: _c,
      updatedAt: _u,
      ...terms
    } = r;
    return { ...terms, id: versionId, resourceId: r.id, version, sellerDomain: seller.domain, createdAt: at };
  }

  async function detail(resource: Resource): Promise<ResourceDetail> {
    const seller = await sellerFor(resource.sellerId);
    const asset = networks.asset(resource.network, resource.assetCode, resource.assetIssuer);
    const verified = seller.domainVerifiedAt !== null;
    return {
      ...resource,
      paymentRequirements: {
        scheme: 'exact',
        network: resource.network,
        amount: resource.amount,
        payTo: resource.payTo,
        // An asset removed from configuration after the resource was stored still shows its terms.
        asset: asset ?? { code: resource.assetCode, issuer: resource.assetIssuer, contractId: '' as const },
        maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
        resource: resource.url,
      },
      sellerTrust: {
        sellerId: seller.id,
        displayName: seller.displayName,
        domain: seller.domain,
        domainVerified: verified,
        domainVerifiedAt: seller.domainVerifiedAt,
        trusted: verified,
      },
      settlementStats: await resources.settlementStats(resource.id),
    };
  }

  async function notify(resourceId: string) {
    await deps.onCatalogChange?.(resourceId);
  }

  return {
    /** The created resource and its warnings (readiness of the payTo wallet first; the resource is created anyway). */
    async create(
      principal: Principal,
      input: ResourceTerms & { sellerId: string },
    ): Promise<ResourceDetail & { warnings: Array<Pick<ValidationIssue, 'code' | 'field' | 'message'>> }> {
      assertActsFor(principal, input.sellerId);
      const seller = await sellerFor(input.sellerId);
      const { sellerId, ...rawTerms } = input;
      const terms: ResourceTerms = { ...rawTerms, extensions: rawTerms.extensions ?? {} };
      const warnings = check(terms, seller);
      const walletWarnings = readiness(terms);
      const now = new Date();
      const resource: Resource = {
        ...listedTerms(terms),
        id: newId('resource'),
        sellerId,
        versionId: newId('version'),
        version: 1,
        status: 'active',
        createdAt: now,
        updatedAt: now,
      };
      await guardDuplicateEndpoint(resource, findEndpoint, () =>
        resources.insert(resource, versionOf(resource, seller, resource.versionId, now), {
          id: newId('catalogEvent'),
          kind: 'created',
        }),
      );
      await notify(resource.id);
      const issues = [...(await walletWarnings), ...warnings].map(({ code, field, message }) => ({
        code,
        field,
        message,
      }));
      return { ...(await detail(resource)), warnings: issues };
    },

    async get(id: string): Promise<ResourceDetail> {
      return detail(await load(id));
    },

    /** Active resources for anyone; soft-deleted ones only for their seller (sellerId filter) or the operator. */
    async list(principal: Principal, filters: ResourceFilters, page: PageRequest): Promise<Page<Resource>> {
      if (filters.status === 'deleted' && principal.role !== 'operator') {
        if (!filters.sellerId)
          throw new DomainError(
            principal.role === 'public' ? 'UNAUTHORIZED' : 'FORBIDDEN',
            'Listing deleted resources needs the operator key, or a seller key with its own sellerId',
          );
        assertActsFor(principal, filters.sellerId);
      }
      return resources.list(filters, decodeCursor(page.cursor), pageLimit(page.limit));
    },

    async versions(id: string, page: PageRequest): Promise<Page<ResourceVersion>> {
      await load(id);
      return resources.versions(id, decodeCursor(page.cursor), pageLimit(page.limit));
    },

    /** A change of any term stores a new version; history is kept and receipts keep pointing at their version. */
    async update(
      principal: Principal,
      id: string,
      patch: Partial<Pick<ResourceTerms, TermField>>,
    ): Promise<ResourceDetail> {
      for (let attempt = 0; attempt < 3; attempt++) {
        const current = await load(id);
        assertActsFor(principal, current.sellerId);
        if (current.status === 'deleted') throw new DomainError('CONFLICT', 'A deleted resource cannot be changed');
        const seller = await sellerFor(current.sellerId);
        // The patch is checked as submitted (its amount as the seller wrote it), then listed with Stroops.
        const was = submittedTerms(current);
        const wanted: ResourceTerms = { ...was };
        for (const field of TERM_FIELDS) {
          if (patch[field] !== undefined) (wanted as unknown as Record<string, unknown>)[field] = patch[field];
        }
        wanted.amount = normalizeAmount(wanted.amount);
        const changed = TERM_FIELDS.some((f) => !sameJson(was[f], wanted[f]));
        if (!changed) return detail(current);
        check(wanted, seller);
        const next: Resource = { ...current, ...listedTerms(wanted), type: current.type };
        const now = new Date();
        next.version = current.version + 1;
        next.versionId = newId('version');
        next.updatedAt = now;
        const saved = await guardDuplicateEndpoint(next, findEndpoint, () =>
          resources.saveNewVersion(next, versionOf(next, seller, next.versionId, now), current.version, {
            id: newId('catalogEvent'),
            kind: 'updated',
          }),
        );
        if (saved) {
          await notify(id);
          return detail(next);
        }
      }
      throw new DomainError('CONFLICT', 'The resource was changed concurrently; retry the request');
    },

    /** Soft-deletes a resource that has payments or receipts (they keep pointing at it); hard-deletes otherwise. */
    async remove(principal: Principal, id: string): Promise<{ id: string; status: 'deleted'; mode: 'soft' | 'hard' }> {
      const current = await load(id);
      assertActsFor(principal, current.sellerId);
      const outcome = await resources.deleteIfUnpaid(id);
      if (outcome === 'has_payments') await resources.softDelete(id, { id: newId('catalogEvent'), kind: 'deleted' });
      await notify(id);
      return { id, status: 'deleted', mode: outcome === 'deleted' ? 'hard' : 'soft' };
    },
  };
}

export type ResourceService = ReturnType<typeof createResourceService>;
