import { checkJsonSchema, compileSchema } from '../catalog/json-schema';
import { hostClaimedByOther, urlHostProblem } from '../catalog/catalog-rules';
import { checkExtensions } from '../catalog/extension-rules';
import type { ResourceTerms } from '../catalog/resource-rules';
import type { NetworkRegistry } from '../network-registry';

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
 *   size, no external $ref); `info.input.type` is http or mcp, an MCP tool names `tool` (the key is URL + tool);
 * - proven hosts only (issue #29): the payTo is a seller's wallet, that seller has verified its domain, the URL's
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
}

export type ObservationOutcome = { status: 'recorded'; id: string } | { status: 'cataloged' } | { status: 'rejected'; reason: string } | { status: 'ignored' };

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
}

export interface ObservedResource {
  id: string;
  network: string;
  resourceUrl: string;
  toolName: string;
  type: 'http' | 'mcp';
  description: string;
  mimeType: string | null;
  payTo: string;
  asset: string;
  amount: string;
  bazaar: Record<string, unknown>;
  sellerId: string | null;
  lastPaymentAt: Date;
  settledCalls30d: number;
  /** Distinct payers over 30 days whose payment paid at least the resource's price. */
  uniquePayers30d: number;
  /** Those payers, each weighted by what it paid at the price over 0.01 of the asset, at most 1 (the ranking's usage). */
  weightedPayers30d: number;
}

export interface ObservedResourceRepository {
  /**
   * The seller whose wallet is `address`: its domain, whether it verified it, and which seller proved `host` (the
   * most specific verified domain covering it; null: nobody).
   */
  walletSeller(address: string, host: string): Promise<{ id: string; domain: string; domainVerified: boolean; hostOwner: string | null } | null>;
  isCataloged(urls: string[]): Promise<boolean>;
  /** Upserts the observed resource and records the payment (once per transaction). */
  record(write: ObservedResourceWrite): Promise<string>;
  /** Observed resources with a payment in the last 30 days, by usage (unique payers, calls, last payment). */
  listRecent(type: 'http' | 'mcp' | undefined, offset: number, limit: number): Promise<{ items: ObservedResource[]; total: number }>;
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
export function readObservation(p: SettledPayment): { ok: true; value: Omit<ObservedResourceWrite, 'sellerId'>; host: string } | { ok: false; reason: string } {
  if (!isObj(p.bazaarExtension)) return { ok: false, reason: 'no bazaar extension' };
  const ext = p.bazaarExtension;
  if (Buffer.byteLength(JSON.stringify(ext), 'utf8') > MAX_EXTENSION_BYTES) return { ok: false, reason: 'the bazaar extension is larger than 16 kB' };
  if (typeof p.resourceUrl !== 'string' || p.resourceUrl.length > 2048) return { ok: false, reason: 'no resource URL (at most 2048 characters)' };
  let url: URL;
  try {
    url = new URL(p.resourceUrl);
  } catch {
    return { ok: false, reason: 'the resource URL is not a URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'the resource URL must be http(s)' };
  if (url.username || url.password) return { ok: false, reason: 'the resource URL must not carry credentials' };
  if (!isObj(ext.info) || !isObj(ext.schema)) return { ok: false, reason: 'the bazaar extension needs info and schema' };
  const schemaProblem = checkJsonSchema(ext.schema);
  if (schemaProblem) return { ok: false, reason: `schema ${schemaProblem}` };
  const invalid = compileSchema(ext.schema)(ext.info);
  if (invalid) return { ok: false, reason: `info does not validate against schema: ${invalid}` };
  const input = ext.info.input;
  if (!isObj(input) || (input.type !== 'http' && input.type !== 'mcp')) return { ok: false, reason: 'info.input.type must be http or mcp' };
  let toolName = '';
  if (input.type === 'mcp') {
    if (typeof input.tool !== 'string' || input.tool === '' || input.tool.length > 200 || !isObj(input.inputSchema)) return { ok: false, reason: 'an MCP tool needs info.input.tool and info.input.inputSchema' };
    toolName = input.tool;
  }
  const routeTemplate = validRouteTemplate(ext.routeTemplate) ? ext.routeTemplate : null;
  const resourceUrl = `${url.origin}${routeTemplate ?? url.pathname}`;
  const description = (typeof input.description === 'string' ? input.description : p.description ?? '').slice(0, 2000);
  return {
    ok: true,
    host: url.hostname,
    value: {
      network: p.network, resourceUrl, toolName, type: input.type, routeTemplate, description, mimeType: p.mimeType?.slice(0, 200) ?? null,
      payTo: p.payTo, asset: p.asset, amount: p.amount, bazaar: ext, payer: p.payer, transaction: p.transaction,
    },
  };
}

/**
 * Proven hosts only (issue #29): why the Bazaar must not learn `url` for the seller whose wallet was paid, or null.
 * The catalog's own rules decide the host (urlHostProblem, hostClaimedByOther); the Bazaar adds that the domain is
 * verified, since nothing else (no catalog entry, no key) vouches for an observed resource.
 */
export function provenHostProblem(url: string, seller: { id: string; domain: string; domainVerified: boolean; hostOwner: string | null } | null): string | null {
  if (!seller) return 'the payTo is not the wallet of a signed-up seller: the Bazaar learns only from payments to sellers';
  if (!seller.domainVerified) return `the seller's domain ${seller.domain} is not verified: the Bazaar learns URLs only on a domain the paid seller has verified`;
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
const ANNOUNCED_TIMEOUT_SECONDS = 300;

export function createBazaar(deps: { repo: ObservedResourceRepository; networks: NetworkRegistry; onError?(err: unknown): void }) {
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
        if (await deps.repo.isCataloged([read.value.resourceUrl, String(p.resourceUrl)])) return { status: 'cataloged' };
        const seller = await deps.repo.walletSeller(p.payTo, read.host);
        const problem = provenHostProblem(read.value.resourceUrl, seller) ?? extensionProblem(read.value);
        if (problem || !seller) return { status: 'rejected', reason: problem ?? 'the payTo is not a seller' };
        const id = await deps.repo.record({ ...read.value, sellerId: seller.id });
        return { status: 'recorded', id };
      } catch (err) {
        deps.onError?.(err);
        return { status: 'ignored' };
      }
    },

    /** Observed resources in the Bazaar list shape (x402 DiscoveryResource), labelled observed, with their usage. */
    async observedItems(type: 'http' | 'mcp' | undefined, offset: number, limit: number) {
      const { items, total } = await deps.repo.listRecent(type, offset, limit);
      return {
        total,
        items: items.map((o) => ({
          resource: o.resourceUrl,
          type: o.type,
          x402Version: X402_VERSION,
          accepts: [{ scheme: 'exact', network: o.network, asset: o.asset, amount: o.amount, payTo: o.payTo, maxTimeoutSeconds: ANNOUNCED_TIMEOUT_SECONDS, extra: { areFeesSponsored: true } }],
          lastUpdated: o.lastPaymentAt.toISOString(),
          metadata: {
            observed: true,
            trust: 'observed',
            observedResourceId: o.id,
            ...(o.sellerId ? { sellerId: o.sellerId } : {}),
            ...(o.toolName ? { tool: o.toolName } : {}),
            // Issue #29: learned only on a proven host; the description and bazaar metadata are the seller's words.
            hostVerified: true,
            untrusted: true,
            description: o.description,
            ...(o.mimeType ? { mimeType: o.mimeType } : {}),
            bazaar: o.bazaar,
            usage: { settledCalls30d: o.settledCalls30d, uniquePayers30d: o.uniquePayers30d, weightedPayers30d: o.weightedPayers30d, lastPaymentAt: o.lastPaymentAt.toISOString() },
          },
        })),
      };
    },
  };
}

export type Bazaar = ReturnType<typeof createBazaar>;

/** Bazaar paging: limit 1..100 (default 20), offset >= 0; out-of-range values are clamped, never refused. */
export function clampPaging(limit: unknown, offset: unknown): { limit: number; offset: number } {
  const int = (v: unknown, d: number) => (typeof v === 'number' && Number.isFinite(v) ? Math.trunc(v) : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : d);
  return { limit: Math.min(100, Math.max(1, int(limit, 20))), offset: Math.min(1_000_000, Math.max(0, int(offset, 0))) };
}
