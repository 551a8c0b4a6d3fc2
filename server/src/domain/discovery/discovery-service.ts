import { DomainError, notFound } from '../errors';
import { newId } from '../ids';
import { assertActsFor, type Principal } from '../auth/principal';
import { decodeCursor, pageLimit } from '../pagination';
import { isPayToAddress, type NetworkRegistry } from '../network-registry';
import type { Seller } from '../sellers/types';
import type { Resource, ResourceVersion } from '../catalog/types';
import { listedTerms, type ResourceTerms, type RuleResult, type ValidationIssue } from '../catalog/resource-rules';
import { checkCatalogTerms, FIELD_PREFIX } from '../catalog/catalog-rules';
import { mcpToolName } from '../catalog/extension-rules';
import { throwIfInvalid } from '../catalog/resource-service';
import { guardDuplicateEndpoint } from '../catalog/endpoint';
import { needsTrustline, readinessWarnings, type WalletStateReader } from '../catalog/payto-readiness';
import {
  RANKING_STRATEGY,
  RANKING_WEIGHTS,
  SEARCH_CANDIDATES,
  SIGNALS_MAX_AGE_SECONDS,
  decodeSearchCursor,
  encodeSearchCursor,
} from './ranking';
import type { DiscoveryFilters, DiscoveryItem, DiscoveryRepository } from './types';
import type { Trust } from '../trust/types';
import { diversify } from './diversity';
import { TERM_FIELDS, sameJson } from '../catalog/term-fields';
import type { Stroops } from '../amount';

/**
 * Discovery use cases: browse and search the index, validate a resource, catalog it. Cataloging validates with the
 * anti-poisoning rules, writes resource + version + catalog event (+ the seller's declarations) in one transaction
 * and queues indexing; the index itself is written only by the indexing worker.
 */
export interface DiscoveryServiceDeps {
  repo: DiscoveryRepository;
  networks: NetworkRegistry;
  findSeller(id: string): Promise<Seller | null>;
  findResource(id: string): Promise<Resource | null>;
  /** The seller's active http resource with this URL and method (catalog/endpoint.ts), for the 409 naming it. */
  findActiveEndpoint(sellerId: string, url: string, method: string): Promise<string | null>;
  domainVerifiedByOther(domain: string, sellerId: string): Promise<boolean>;
  queueIndexing(catalogEventId: string, resourceId: string): Promise<void>;
  /** FACILITATOR_MIN_AMOUNT: validate and catalog refuse a price below it. */
  minimumStroops?: Stroops;
  /** Seller readiness: the payTo wallet's account and trustline on the ledger (null: cannot tell now). */
  walletState?: WalletStateReader;
  observe: DiscoveryObserver;
  /** Issue #33: the trust block of each listed resource (absent: items carry none). */
  trustOf?(resourceIds: string[]): Promise<Map<string, Trust>>;
}

/** What the service reports to metrics. */
export interface DiscoveryObserver {
  validationFailed(errors: ValidationIssue[]): void;
  cataloged(kind: 'cataloged'): void;
  searched(result: { seconds: number; empty: boolean; partial: boolean }): void;
  listed(result: { partial: boolean }): void;
}

export interface CatalogRequest {
  sellerId: string;
  resourceId?: string;
  trusted?: boolean;
  payToDeclared?: boolean;
  resource: Omit<ResourceTerms, 'extensions'> & { extensions?: Record<string, unknown> };
}

export interface CatalogOutcome {
  created: boolean;
  /** Warnings of the rules (e.g. TRUSTLINE_REQUIRED on payTo): the resource is cataloged anyway. */
  warnings: Array<Pick<ValidationIssue, 'code' | 'field' | 'message'>>;
  resourceId: string;
  versionId: string;
  catalogEventId: string;
}

export function createDiscoveryService(deps: DiscoveryServiceDeps) {
  const { repo } = deps;

  async function rules(
    req: CatalogRequest,
    principal: Principal,
    excludeResourceId: string | null,
    mode: 'validate' | 'catalog',
  ): Promise<{ result: RuleResult; seller: Seller | null; terms: ResourceTerms }> {
    const terms: ResourceTerms = { ...req.resource, extensions: req.resource.extensions ?? {} };
    const toolName = terms.type === 'mcp' ? mcpToolName(terms.extensions) : null;
    const asset = deps.networks.asset(terms.network, terms.assetCode, terms.assetIssuer);
    const walletRead =
      asset && deps.walletState && isPayToAddress(terms.payTo) && needsTrustline(terms.payTo, asset)
        ? deps.walletState(terms.network, terms.payTo, asset)
        : Promise.resolve(null);
    const [facts, toolOwner, wallet] = await Promise.all([
      // One read where the repository offers it (seller, payTo owner, domain verified by another seller).
      repo.catalogFacts
        ? repo.catalogFacts(req.sellerId, terms.payTo, terms.url)
        : deps.findSeller(req.sellerId).then(async (s) => ({
            hostOwner: undefined,
            seller: s,
            payToOwner: s ? await repo.walletOwner(terms.payTo) : null,
            domainVerifiedByOther: s ? await deps.domainVerifiedByOther(s.domain, s.id) : false,
          })),
      toolName ? repo.mcpToolOwner(terms.url, toolName, excludeResourceId) : Promise.resolve(null),
      walletRead,
    ]);
    const { seller, payToOwner, domainVerifiedByOther, hostOwner } = facts;
    // Validating a resource the seller already cataloged would collide with itself: only a warning there.
    const ownToolOnValidate =
      mode === 'validate' && toolOwner !== null && seller !== null && toolOwner.sellerId === seller.id;
    const result = checkCatalogTerms(terms, {
      networks: deps.networks,
      seller: seller
        ? {
            id: seller.id,
            walletAddress: seller.walletAddress,
            domain: seller.domain,
            domainVerified: seller.domainVerifiedAt !== null,
          }
        : null,
      callerSellerId: principal.role === 'seller' ? principal.sellerId : null,
      trusted: req.trusted ?? false,
      payToDeclared: req.payToDeclared ?? false,
      payToOwner,
      domainVerifiedByOther,
      hostOwner,
      mcpToolConflict: toolOwner && !ownToolOnValidate ? toolOwner.resourceId : null,
      minimumStroops: deps.minimumStroops,
    });
    if (ownToolOnValidate && toolOwner) {
      result.warnings.push({
        code: 'CATALOG_VALIDATION_FAILED',
        field: `${FIELD_PREFIX}extensions.mcp.toolName`,
        message:
          `your resource ${toolOwner.resourceId} already offers this tool on this URL; catalog with resourceId ` +
          `${toolOwner.resourceId} to update it`,
      });
    }
    if (asset)
      result.warnings.push(
        ...readinessWarnings(wallet, { network: terms.network, payTo: terms.payTo, asset, fieldPrefix: FIELD_PREFIX }),
      );
    if (result.errors.length) deps.observe.validationFailed(result.errors);
    return { result, seller, terms };
  }

  /**
   * The trust block of every item, in one read of those that do not carry it yet (the search statement reads its
   * page's blocks itself). Without the trust area, items carry none.
   */
  const withTrust = async <T extends DiscoveryItem>(items: T[]): Promise<T[]> => {
    if (!deps.trustOf) return items.map(({ trust: _t, ...i }) => i as T);
    const missing = items.filter((i) => !i.trust).map((i) => i.id);
    if (missing.length === 0) return items;
    const trust = await deps.trustOf(missing);
    return items.map((i) => (!i.trust && trust.has(i.id) ? { ...i, trust: trust.get(i.id) } : i));
  };

  const strip = (issues: ValidationIssue[]) => issues.map(({ code, field, message }) => ({ code, field, message }));

  return {
    async list(
      filters: DiscoveryFilters,
      page: { cursor?: string; limit?: number },
    ): Promise<{ items: DiscoveryItem[]; nextCursor: string | null; partialResults: boolean }> {
      const limit = pageLimit(page.limit);
      const [rows, lag] = await Promise.all([
        repo.list(filters, decodeCursor(page.cursor), limit + 1),
        repo.indexLag(),
      ]);
      const items = rows.slice(0, limit);
      const nextCursor =
        rows.length > limit ? Buffer.from(items[items.length - 1].id, 'utf8').toString('base64url') : null;
      const partialResults = lag.pending;
      deps.observe.listed({ partial: partialResults });
      return { items: await withTrust(items), nextCursor, partialResults };
    },

    async search(q: string, filters: DiscoveryFilters, page: { cursor?: string; limit?: number }) {
      const started = process.hrtime.bigint();
      const limit = pageLimit(page.limit);
      const after = decodeSearchCursor(page.cursor);
      const rows = await repo.search(q, filters, after, limit + 1, {
        textWeight: RANKING_WEIGHTS.text,
        candidates: SEARCH_CANDIDATES,
        signalsMaxAgeSeconds: SIGNALS_MAX_AGE_SECONDS,
      });
      // The search statement reads the index lag with the results; a query with no words runs none.
      const lag = rows.lag ?? (await repo.indexLag());
      const items = rows.slice(0, limit);
      const last = items[items.length - 1];
      const nextCursor = rows.length > limit ? encodeSearchCursor(last.score, last.id, last.mode) : null;
      const partialResults = lag.pending || items.some((i) => !i.signalsFresh);
      deps.observe.searched({
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
        empty: items.length === 0,
        partial: partialResults,
      });
      // Diversity (issue #33) on the first page: the same results, at most two per origin in the top 10.
      const shown = after === null ? diversify(items, q) : items;
      // The ranking's own fields (score, signalsFresh) stay on the items instead of being copied away per item (a
      // rest copy per result was a visible share of a search's CPU: issue #31): readers show the contract's fields
      // only (http/presenters-discovery.ts).
      return { items: await withTrust(shown), nextCursor, partialResults, strategy: RANKING_STRATEGY };
    },

    async validate(principal: Principal, req: CatalogRequest) {
      const { result } = await rules(req, principal, null, 'validate');
      return { ok: result.errors.length === 0, warnings: strip(result.warnings), errors: strip(result.errors) };
    },

    async catalog(principal: Principal, req: CatalogRequest): Promise<CatalogOutcome> {
      assertActsFor(principal, req.sellerId);
      for (let attempt = 0; attempt < 3; attempt++) {
        let existing: Resource | null = null;
        if (req.resourceId !== undefined) {
          existing = await deps.findResource(req.resourceId);
          if (!existing) throw notFound('resource', req.resourceId);
          if (existing.sellerId !== req.sellerId)
            throw new DomainError('FORBIDDEN', 'That resource belongs to another seller');
          if (existing.status !== 'active')
            throw new DomainError('CONFLICT', 'A deleted resource cannot be cataloged again');
          if (existing.type !== req.resource.type)
            throw new DomainError('CONFLICT', `The type of a resource cannot change (it is ${existing.type})`);
        }
        const { result, seller, terms } = await rules(req, principal, existing?.id ?? null, 'catalog');
        throwIfInvalid(result);
        if (!seller) throw notFound('seller', req.sellerId);
        const now = new Date();
        const normalized = listedTerms(terms);
        const declaration = {
          payTo: req.payToDeclared && normalized.payTo !== seller.walletAddress ? normalized.payTo : null,
          trusted: req.trusted ?? false,
        };
        const toolName = normalized.type === 'mcp' ? mcpToolName(normalized.extensions) : null;
        const mcpTool = toolName ? { url: normalized.url, toolName } : null;
        const eventId = newId('catalogEvent');
        let resource: Resource;
        let mode: 'create' | 'update' | 'unchanged';
        if (!existing) {
          mode = 'create';
          resource = {
            ...normalized,
            id: newId('resource'),
            sellerId: seller.id,
            versionId: newId('version'),
            version: 1,
            status: 'active',
            createdAt: now,
            updatedAt: now,
          };
        } else if (TERM_FIELDS.every((f) => sameJson(existing[f], normalized[f]))) {
          mode = 'unchanged';
          resource = existing;
        } else {
          mode = 'update';
          resource = {
            ...existing,
            ...normalized,
            version: existing.version + 1,
            versionId: newId('version'),
            updatedAt: now,
          };
        }
        const version: ResourceVersion | null =
          mode === 'unchanged'
            ? null
            : (() => {
                const {
                  type: _t,
                  id: _id,
                  sellerId: _s,
                  versionId: _v,
                  version: n,
                  status: _st,
                  createdAt: _c,
                  updatedAt: _u,
                  ...rest
                } = resource;
                return {
                  ...rest,
                  id: resource.versionId,
                  resourceId: resource.id,
                  version: n,
                  sellerDomain: seller.domain,
                  createdAt: now,
                };
              })();
        const outcome = await guardDuplicateEndpoint(
          { ...resource, sellerId: seller.id },
          deps.findActiveEndpoint,
          () =>
            repo.catalog({
              mode,
              resource,
              version,
              expectedVersion: existing ? existing.version : null,
              event: { id: eventId, versionId: resource.versionId },
              declaration,
              mcpTool,
            }),
        );
        if (outcome.status === 'version_conflict') continue;
        if (outcome.status === 'mcp_conflict') {
          const issue: ValidationIssue = {
            code: 'CATALOG_VALIDATION_FAILED',
            field: `${FIELD_PREFIX}extensions.mcp.toolName`,
            message:
              `ambiguous MCP metadata: resource ${outcome.resourceId} already offers tool ${toolName ?? ''} on ` +
              `${normalized.url}`,
            reason: 'ambiguous_mcp',
          };
          deps.observe.validationFailed([issue]);
          throwIfInvalid({ errors: [issue], warnings: [] });
        }
        deps.observe.cataloged('cataloged');
        await deps.queueIndexing(eventId, resource.id);
        return {
          created: mode !== 'unchanged',
          warnings: strip(result.warnings),
          resourceId: resource.id,
          versionId: resource.versionId,
          catalogEventId: eventId,
        };
      }
      throw new DomainError('CONFLICT', 'The resource was changed concurrently; retry the request');
    },
  };
}

export type DiscoveryService = ReturnType<typeof createDiscoveryService>;
