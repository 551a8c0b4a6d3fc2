import { checkJsonSchema, compileSchema } from '../catalog/json-schema';
import { hostClaimedByOther, urlHostProblem } from '../catalog/catalog-rules';
import { checkExtensions } from '../catalog/extension-rules';
import type { ResourceTerms } from '../catalog/resource-rules';
import type { NetworkRegistry } from '../network-registry';
import { MAX_TIMEOUT_SECONDS } from '../defaults';
import type { DiscoveryFilters, DiscoveryItem } from './types';
import type { Trust } from '../trust/types';
import { isLocalHost, sanitizeServiceMetadata, type ServiceMetadata } from './bazaar-metadata';

/**
 * The Bazaar that learns (issue #21). A payment settled through /x402/settle whose payload carries the x402 `bazaar`
 * extension teaches us the resource it paid for: after the checks below it is recorded as an *observed* resource
 * (never trusted, never in /v1/discovery search: only in the x402 Bazaar list, labelled `observed`), linked to the
 * seller whose wallet the payTo is, with its usage (settled calls and unique payers over 30 days, last payment).
 * An observed resource without a payment for 30 days drops out of the list (and is purged by the search-sync pass).
 *
 * Checks (the catalog's anti-poisoning rules where they apply):
 * - the URL is http(s), at most 2048 characters, without credentials; the catalog key is the origin plus the
 *   extension's `routeTemplate` when it passes the spec's rules, else the concrete path (query and fragment dropped);
 * - `info` validates against the extension's `schema`, which must itself pass our JSON Schema bounds (draft 2020-12,
 *   size, no external $ref/$id); `info.input.type` is http or mcp, an MCP tool names `toolName` or the older `tool`
 *   (the key is URL + tool);
 * - proven hosts only (issue #29; under LOCAL_DEV_DOMAINS a loopback host is learned for the paid seller, issue #30):
 *   the payTo is a seller's wallet, that seller has verified its domain, the URL's
 *   host is that domain or a subdomain of it (catalog-rules `urlHostProblem`), and no other seller proved a more
 *   specific domain covering the host (catalog-rules `hostClaimedByOther`): a stranger paying itself dust to its
 *   own wallet for another company's URL teaches the Bazaar nothing;
 * - the extension passes the catalog's extension rules (catalog/extension-rules `checkExtensions`: the Bazaar
 *   shape, `info.input` type and method, MCP tool names), as a cataloged resource's would;
 * - a URL already cataloged by a seller is not recorded again (its usage comes from its payment attempts).
 *
 * What the Bazaar serves of an observed resource is the seller's words: it is labelled `trust: "observed"` and
 * `untrusted: true` (a client shows it as data and never follows it as instructions), and its usage counts payers
 * weighted by what they paid at the resource's price (`weightedPayers30d`, data/observed-resource-repository.ts).
 */
export interface SettledPayment {
  network: string;
  payTo: string;
  payer: string;
  resourceUrl: string | null | undefined;
  bazaarExtension: unknown;
  /** Atomic units (stroops), as the x402 requirements carry it. */
  amount: string;
  /** The asset's contract id. */
  asset: string;
  transaction: string;
  description?: string;
  mimeType?: string;
  /** The payload's `resource` object as sent: its `serviceName`, `tags`, `iconUrl` are soft-dropped when invalid. */
  resourceInfo?: unknown;
  /** The keys of the payload's `extensions` (the Bazaar list's `extensions` filter). */
  extensionKeys?: string[];
}

export type ObservationOutcome =
  | { status: 'recorded'; id: string }
  | { status: 'cataloged' }
  | { status: 'rejected'; reason: string }
  | { status: 'ignored' };

export interface ObservedResourceWrite {
  network: string;
  resourceUrl: string;
  toolName: string;
  type: 'http' | 'mcp';
  routeTemplate: string | null;
  description: string;
  mimeType: string | null;
  payTo: string;
  asset: string;
  amount: string;
  bazaar: Record<string, unknown>;
  sellerId: string | null;
  payer: string;
  transaction: string;
  serviceName: string | null;
  tags: string[];
  iconUrl: string | null;
  extensionNames: string[];
  /** Learned on a loopback host under LOCAL_DEV_DOMAINS: listed only while that switch is on. */
  localDev: boolean;
}

/** An observed resource as listed: what was written (but route, payer, transaction, extension names) and usage. */
export interface ObservedResource extends Omit<
  ObservedResourceWrite,
  'routeTemplate' | 'payer' | 'transaction' | 'extensionNames'
> {
  id: string;
  lastPaymentAt: Date;
  settledCalls30d: number;
  /** Distinct payers over 30 days whose payment paid at least the resource's price. */
  uniquePayers30d: number;
  /** Those payers, each weighted by what it paid at the price over 0.01 of the asset, at most 1 (the ranking's usage).
   * */
  weightedPayers30d: number;
}

/**
 * The Bazaar list and search filters (x402 `ListDiscoveryResourcesParams`): every one is applied where it is given;
 * `extension` is one extension key present on the resource (`bazaar`, `mcp`, ...).
 */
export interface BazaarFilters {
  type?: 'http' | 'mcp';
  payTo?: string;
  scheme?: string;
  network?: string;
  extension?: string;
}

/** A listed catalog resource as the Bazaar serves it: the listing item plus what the x402 item shape needs. */
export interface BazaarCatalogDetails {
  updatedAt: Date;
  /** The seller's display name (a `serviceName` when it passes the spec's rules). */
  sellerName: string | null;
  /** The resource's `extensions.bazaar.tags` as stored (sanitized on the way out). */
  bazaarTags: unknown;
  mcpToolName: string | null;
}

/** The Bazaar's read of the listed catalog (data/bazaar-listing-repository.ts), offset-paged with the filters. */
export interface BazaarCatalogRepository {
  /** Listed (discoverable, host not claimed) catalog resources, newest first, with the filters applied in SQL. */
  list(
    filters: BazaarFilters,
    offset: number,
    limit: number,
  ): Promise<{ items: Array<DiscoveryItem & BazaarCatalogDetails>; total: number }>;
  /** The details of these listed resources (a search page), by resource id. */
  details(ids: string[]): Promise<Map<string, BazaarCatalogDetails>>;
}

export interface ObservedResourceRepository {
  /**
   * The seller whose wallet is `address`: its domain, whether it verified it, and which seller proved `host` (the
   * most specific verified domain covering it; null: nobody).
   */
  walletSeller(
    address: string,
    host: string,
  ): Promise<{ id: string; domain: string; domainVerified: boolean; hostOwner: string | null } | null>;
  isCataloged(urls: string[]): Promise<boolean>;
  /** Upserts the observed resource and records the payment (once per transaction). */
  record(write: ObservedResourceWrite): Promise<string>;
  /**
   * Observed resources with a payment in the last 30 days, by usage (unique payers, calls, last payment), with the
   * filters applied; those learned on a loopback host only when `localDev`.
   */
  listRecent(
    filters: BazaarFilters,
    offset: number,
    limit: number,
    opts: { localDev: boolean },
  ): Promise<{ items: ObservedResource[]; total: number }>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_EXTENSION_BYTES = 16 * 1024;

/** The x402 Bazaar spec's routeTemplate rules (specs/extensions/bazaar.md), after percent-decoding. */
export function validRouteTemplate(t: unknown): t is string {
  if (typeof t !== 'string' || t === '' || !t.startsWith('/') || !/^\/[a-zA-Z0-9_/:.\-~%]+$/.test(t)) return false;
  let decoded: string;
  try {
    decoded = decodeURIComponent(t);
  } catch {
    return false;
  }
  return !decoded.includes('..') && !decoded.includes('://');
}

/** Pure: the observed resource a settled payment declares, or why it is refused. */
export function readObservation(
  p: SettledPayment,
): { ok: true; value: Omit<ObservedResourceWrite, 'sellerId'>; host: string } | { ok: false; reason: string } {
  if (!isObj(p.bazaarExtension)) return { ok: false, reason: 'no bazaar extension' };
  const ext = p.bazaarExtension;
  if (Buffer.byteLength(JSON.stringify(ext), 'utf8') > MAX_EXTENSION_BYTES)
    return { ok: false, reason: 'the bazaar extension is larger than 16 kB' };
  if (typeof p.resourceUrl !== 'string' || p.resourceUrl.length > 2048)
    return { ok: false, reason: 'no resource URL (at most 2048 characters)' };
  let url: URL;
  try {
    url = new URL(p.resourceUrl);
  } catch {
    return { ok: false, reason: 'the resource URL is not a URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return { ok: false, reason: 'the resource URL must be http(s)' };
  if (url.username || url.password) return { ok: false, reason: 'the resource URL must not carry credentials' };
  if (!isObj(ext.info) || !isObj(ext.schema))
    return { ok: false, reason: 'the bazaar extension needs info and schema' };
  const external = externalSchemaReference(ext.schema);
  if (external)
    return {
      ok: false,
      reason: `schema must not contain external $ref/$id references (${external.slice(0, 80)}); nothing is fetched`,
    };
  const schemaProblem = checkJsonSchema(ext.schema);
  if (schemaProblem) return { ok: false, reason: `schema ${schemaProblem}` };
  const invalid = compileSchema(ext.schema)(ext.info);
  if (invalid) return { ok: false, reason: `info does not validate against schema: ${invalid}` };
  const input = ext.info.input;
  if (!isObj(input) || (input.type !== 'http' && input.type !== 'mcp'))
    return { ok: false, reason: 'info.input.type must be http or mcp' };
  let toolName = '';
  if (input.type === 'mcp') {
    // @x402/extensions 2.27 names the tool `toolName`; the spec text's older examples `tool`. Both, never two names.
    const names = new Set([input.toolName, input.tool].filter((n) => n !== undefined));
    const name = [...names][0];
    if (names.size !== 1 || typeof name !== 'string' || name === '' || name.length > 200 || !isObj(input.inputSchema))
      return {
        ok: false,
        reason: 'an MCP tool needs one info.input.toolName (or the older tool) and info.input.inputSchema',
      };
    toolName = name;
  }
  const routeTemplate = validRouteTemplate(ext.routeTemplate) ? ext.routeTemplate : null;
  const resourceUrl = `${url.origin}${routeTemplate ?? url.pathname}`;
  const description = (typeof input.description === 'string' ? input.description : (p.description ?? '')).slice(
    0,
    2000,
  );
  return {
    ok: true,
    host: url.hostname,
    value: {
      network: p.network,
      resourceUrl,
      toolName,
      type: input.type,
      routeTemplate,
      description,
      mimeType: p.mimeType?.slice(0, 200) ?? null,
      payTo: p.payTo,
      asset: p.asset,
      amount: p.amount,
      bazaar: ext,
      payer: p.payer,
      transaction: p.transaction,
      ...serviceColumns(sanitizeServiceMetadata(p.resourceInfo)),
      extensionNames: extensionNames(p.extensionKeys),
      localDev: false,
    },
  };
}

const serviceColumns = (m: ServiceMetadata) => ({
  serviceName: m.serviceName ?? null,
  tags: m.tags ?? [],
  iconUrl: m.iconUrl ?? null,
});

/** The payload's extension keys as stored for the `extensions` filter: short identifiers only, at most 16, always
 * bazaar. */
function extensionNames(keys: string[] | undefined): string[] {
  const ok = (keys ?? []).filter((k) => typeof k === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(k));
  return [...new Set(['bazaar', ...ok])].slice(0, 16).sort();
}

/**
 * A `$ref` / `$id` / `$dynamicRef` naming anything but a fragment of the same document (the stock 2.27
 * `validateDiscoveryExtension` rule, with `$dynamicRef`): the value, or null. The Bazaar never resolves one (our
 * Ajv has no loader either); it refuses the extension instead of guessing what the reference meant.
 */
export function externalSchemaReference(node: unknown): string | null {
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const n = stack.pop();
    if (Array.isArray(n)) stack.push(...n);
    else if (isObj(n)) {
      for (const [k, v] of Object.entries(n)) {
        if ((k === '$ref' || k === '$id' || k === '$dynamicRef') && (typeof v !== 'string' || !v.startsWith('#')))
          return typeof v === 'string' ? v : `${k} ${typeof v}`;
        stack.push(v);
      }
    }
  }
  return null;
}

/**
 * Proven hosts only (issue #29): why the Bazaar must not learn `url` for the seller whose wallet was paid, or null.
 * The catalog's own rules decide the host (urlHostProblem, hostClaimedByOther); the Bazaar adds that the domain is
 * verified, since nothing else (no catalog entry, no key) vouches for an observed resource.
 */
export function provenHostProblem(
  url: string,
  seller: { id: string; domain: string; domainVerified: boolean; hostOwner: string | null } | null,
): string | null {
  if (!seller)
    return 'the payTo is not the wallet of a signed-up seller: the Bazaar learns only from payments to sellers';
  if (!seller.domainVerified)
    return (
      `the seller's domain ${seller.domain} is not verified: the Bazaar learns URLs only on a domain the paid ` +
      `seller has verified`
    );
  return urlHostProblem(url, seller.domain) ?? hostClaimedByOther(url, seller.id, seller.hostOwner);
}

/** The catalog's extension rules (checkExtensions) on the learned `bazaar` extension, as on a cataloged resource's. */
function extensionProblem(v: Omit<ObservedResourceWrite, 'sellerId'>): string | null {
  const extensions: Obj = { bazaar: v.bazaar, ...(v.type === 'mcp' ? { mcp: { toolName: v.toolName } } : {}) };
  const terms = { type: v.type, extensions, inputSchema: {}, outputSchema: {} } as unknown as ResourceTerms;
  const { errors } = checkExtensions(terms, '');
  return errors.length ? errors.map((e) => `${e.field} ${e.message}`).join('; ') : null;
}

const X402_VERSION = 2;

export interface BazaarDeps {
  repo: ObservedResourceRepository;
  /** The listed catalog with the Bazaar's filters (absent: the Bazaar lists observed resources only). */
  catalog?: BazaarCatalogRepository;
  networks: NetworkRegistry;
  /** LOCAL_DEV_DOMAINS: also learn (and list) resources on loopback hosts, for the paid seller (local development). */
  localDevDomains?: boolean;
  /** Issue #33: the trust block of listed catalog resources (the search's items carry theirs already). */
  trustOf?(resourceIds: string[]): Promise<Map<string, Trust>>;
  /** The discovery service's ranked search (domain/discovery/discovery-service.ts `search`). */
  search?(
    q: string,
    filters: DiscoveryFilters,
    page: { cursor?: string; limit?: number },
  ): Promise<{ items: DiscoveryItem[]; nextCursor: string | null; partialResults: boolean }>;
  onError?(err: unknown): void;
}

/** The Bazaar filters by their x402 parameter names (`extension` is the `extensions` parameter). */
export type BazaarFilterName = 'type' | 'payTo' | 'scheme' | 'network' | 'extensions';

/**
 * Which Bazaar filters the ranked search applies (pure). It filters in SQL by type, network and the indexed extension
 * keys (bazaar, mcp); `scheme` we answer ourselves (all `exact`: another one finds nothing). `payTo` and another
 * extension key it cannot apply without filtering after its bounded candidate set (which would drop matches
 * silently): they are named in `unapplied` and the results are not narrowed by them.
 */
export function searchFilterPlan(f: BazaarFilters): {
  filters: DiscoveryFilters;
  unapplied: BazaarFilterName[];
  nothing: boolean;
} {
  const filters: DiscoveryFilters = {};
  const unapplied: BazaarFilterName[] = [];
  if (f.type) filters.type = f.type;
  if (f.network) filters.network = f.network;
  if (f.extension !== undefined) {
    if (f.extension === 'bazaar' || f.extension === 'mcp') filters.extension = f.extension;
    else unapplied.push('extensions');
  }
  if (f.payTo !== undefined) unapplied.push('payTo');
  return { filters, unapplied, nothing: f.scheme !== undefined && f.scheme !== 'exact' };
}

export function createBazaar(deps: BazaarDeps) {
  const localDev = deps.localDevDomains ?? false;

  /** A listed catalog resource as an x402 `DiscoveryResource`. */
  function catalogItem(r: DiscoveryItem, d: BazaarCatalogDetails | undefined) {
    const asset = deps.networks.asset(r.network, r.assetCode, r.assetIssuer);
    const meta = sanitizeServiceMetadata({ serviceName: d?.sellerName ?? undefined, tags: d?.bazaarTags });
    return {
      resource: r.url,
      type: r.type,
      x402Version: X402_VERSION,
      accepts: asset
        ? [
            {
              scheme: 'exact',
              network: r.network,
              asset: asset.contractId,
              amount: r.amount.toString(),
              payTo: r.payTo,
              maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
              extra: { areFeesSponsored: true },
            },
          ]
        : [],
      lastUpdated: (d?.updatedAt ?? ulidDate(r.id)).toISOString(),
      description: r.description,
      ...meta,
      // Issue #29: whether the host is proven, and the seller's words labelled as untrusted data.
      metadata: {
        resourceId: r.id,
        sellerId: r.sellerId,
        name: r.name,
        description: r.description,
        routeTemplate: r.routeTemplate,
        status: r.status,
        ...(d?.mcpToolName ? { tool: d.mcpToolName } : {}),
        hostVerified: r.hostVerified,
        untrusted: true,
        // Issue #33: what the service measured (liveness, owner, drift, demand), not the seller's words.
        ...(r.trust
          ? { trust: { ...r.trust, checkedAt: r.trust.checkedAt ? r.trust.checkedAt.toISOString() : null } }
          : {}),
      },
    };
  }

  /** Observed resources in the Bazaar list shape (x402 DiscoveryResource), labelled observed, with their usage. */
  async function observedItems(filters: BazaarFilters, offset: number, limit: number) {
    const { items, total } = await deps.repo.listRecent(filters, offset, limit, { localDev });
    return {
      total,
      items: items.map((o) => ({
        resource: o.resourceUrl,
        type: o.type,
        x402Version: X402_VERSION,
        accepts: [
          {
            scheme: 'exact',
            network: o.network,
            asset: o.asset,
            amount: o.amount,
            payTo: o.payTo,
            maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
            extra: { areFeesSponsored: true },
          },
        ],
        lastUpdated: o.lastPaymentAt.toISOString(),
        ...(o.description ? { description: o.description } : {}),
        ...(o.mimeType ? { mimeType: o.mimeType } : {}),
        ...(o.serviceName ? { serviceName: o.serviceName } : {}),
        ...(o.tags.length ? { tags: o.tags } : {}),
        ...(o.iconUrl ? { iconUrl: o.iconUrl } : {}),
        extensions: { bazaar: o.bazaar },
        metadata: {
          observed: true,
          trust: 'observed',
          observedResourceId: o.id,
          ...(o.sellerId ? { sellerId: o.sellerId } : {}),
          ...(o.toolName ? { tool: o.toolName } : {}),
          // Issue #29: learned only on a proven host (or, under LOCAL_DEV_DOMAINS, a loopback one); the description
          // and bazaar metadata are the seller's words.
          hostVerified: !o.localDev,
          ...(o.localDev ? { localDev: true } : {}),
          untrusted: true,
          description: o.description,
          ...(o.mimeType ? { mimeType: o.mimeType } : {}),
          bazaar: o.bazaar,
          usage: {
            settledCalls30d: o.settledCalls30d,
            uniquePayers30d: o.uniquePayers30d,
            weightedPayers30d: o.weightedPayers30d,
            lastPaymentAt: o.lastPaymentAt.toISOString(),
          },
        },
      })),
    };
  }

  return {
    /**
     * Called by /x402/settle after a settled payment. Never throws (the payment is final whatever discovery makes of
     * it): a failure is reported to onError and answered as ignored.
     */
    async observeSettledPayment(p: SettledPayment): Promise<ObservationOutcome> {
      try {
        if (p.bazaarExtension === undefined || p.bazaarExtension === null) return { status: 'ignored' };
        const read = readObservation(p);
        if (!read.ok) return { status: 'rejected', reason: read.reason };
        if (await deps.repo.isCataloged([read.value.resourceUrl, String(p.resourceUrl)]))
          return { status: 'cataloged' };
        const seller = await deps.repo.walletSeller(p.payTo, read.host);
        // LOCAL_DEV_DOMAINS: nobody can prove `localhost`, so a loopback URL paid to a signed-up seller is learned for
        // that seller (labelled hostVerified: false, localDev: true) and listed only while the switch is on.
        const local = localDev && isLocalHost(read.host);
        const problem =
          (local
            ? seller
              ? null
              : 'the payTo is not the wallet of a signed-up seller: the Bazaar learns only from payments to sellers'
            : provenHostProblem(read.value.resourceUrl, seller)) ?? extensionProblem(read.value);
        if (problem || !seller) return { status: 'rejected', reason: problem ?? 'the payTo is not a seller' };
        const id = await deps.repo.record({ ...read.value, sellerId: seller.id, localDev: local });
        return { status: 'recorded', id };
      } catch (err) {
        deps.onError?.(err);
        return { status: 'ignored' };
      }
    },

    observedItems,

    /**
     * The Bazaar list (x402 `DiscoveryResourcesResponse`): the listed catalog first (newest first), then the observed
     * resources by usage, every filter applied to both; `offset`/`limit` run over the two as one list.
     */
    async list(filters: BazaarFilters, offset: number, limit: number) {
      // Every resource we list is paid with `exact`: another scheme matches nothing (applied, not ignored).
      if (filters.scheme !== undefined && filters.scheme !== 'exact') return { items: [], total: 0 };
      const catalog = deps.catalog ? await deps.catalog.list(filters, offset, limit) : { items: [], total: 0 };
      const trust =
        deps.trustOf && catalog.items.length
          ? await deps.trustOf(catalog.items.map((r) => r.id))
          : new Map<string, Trust>();
      const listed = catalog.items.map((r) => catalogItem({ ...r, trust: trust.get(r.id) ?? r.trust }, r));
      const observedOffset = Math.max(0, offset - catalog.total);
      const observed = await observedItems(filters, observedOffset, limit - listed.length);
      return { items: [...listed, ...observed.items], total: catalog.total + observed.total };
    },

    /**
     * The Bazaar search (x402 `SearchDiscoveryResourcesResponse` + `unappliedFilters`): the discovery service's ranked
     * search over the listed catalog with the filters it can apply (searchFilterPlan), in the Bazaar item shape.
     */
    async search(query: string, f: BazaarFilters, page: { cursor?: string; limit: number }) {
      const plan = searchFilterPlan(f);
      if (plan.nothing || !deps.search)
        return { resources: [], partialResults: false, cursor: null, unappliedFilters: plan.unapplied };
      const found = await deps.search(query, plan.filters, page);
      const details =
        deps.catalog && found.items.length
          ? await deps.catalog.details(found.items.map((i) => i.id))
          : new Map<string, BazaarCatalogDetails>();
      return {
        resources: found.items.map((r) => catalogItem(r, details.get(r.id))),
        partialResults: found.partialResults,
        cursor: found.nextCursor,
        unappliedFilters: plan.unapplied,
      };
    },
  };
}

export type Bazaar = ReturnType<typeof createBazaar>;

/** Bazaar paging: limit 1..100 (default 20), offset >= 0; out-of-range values are clamped, never refused. */
export function clampPaging(limit: unknown, offset: unknown): { limit: number; offset: number } {
  const int = (v: unknown, d: number) =>
    typeof v === 'number' && Number.isFinite(v)
      ? Math.trunc(v)
      : typeof v === 'string' && /^-?\d+$/.test(v)
        ? Number(v)
        : d;
  return {
    limit: Math.min(100, Math.max(1, int(limit, 20))),
    offset: Math.min(1_000_000, Math.max(0, int(offset, 0))),
  };
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The creation time a prefixed ULID carries (its first 10 characters). */
function ulidDate(id: string): Date {
  const ulid = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11).toUpperCase();
  let ms = 0;
  for (const ch of ulid) ms = ms * 32 + Math.max(0, CROCKFORD.indexOf(ch));
  return new Date(ms);
}
