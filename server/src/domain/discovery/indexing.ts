import type { NetworkRegistry } from '../network-registry';
import type { Resource } from '../catalog/types';
import { checkCatalogTerms } from '../catalog/catalog-rules';
import { issueReason, submittedTerms, type ListedTerms, type ValidationIssue } from '../catalog/resource-rules';
import { mcpToolName } from '../catalog/extension-rules';

/**
 * Builds the search document of a resource. Everything here is pure: the indexing worker loads the snapshot (in
 * one transaction, under a per-resource lock) and writes what this returns.
 *
 * The anti-poisoning rules run again at indexing time, so a resource that reached the catalog another way (the
 * resources API only warns about some of them) is kept out of discovery: `discoverable` is false and the reasons
 * are stored.
 */
export interface IndexSnapshot {
  resource: Resource | null;
  seller: { id: string; walletAddress: string; domain: string; domainVerified: boolean } | null;
  declaration: { payTo: string | null; trusted: boolean } | null;
  payToOwner: string | null;
  domainVerifiedByOther: boolean;
  /** The oldest other active resource offering the same MCP tool on the same URL. */
  mcpToolOwner: { resourceId: string; sellerId: string } | null;
  /** The seller whose verified domain most specifically covers the URL's host (migration 0050 host_owner), or null. */
  hostOwner: string | null;
}

/** The listing's terms as cataloged (ListedTerms but the schemas and extensions) and its index data. */
export interface SearchDocument extends Omit<ListedTerms, 'inputSchema' | 'outputSchema' | 'extensions'> {
  resourceId: string;
  sellerId: string;
  versionId: string;
  version: number;
  status: string;
  extensionNames: string[];
  mcpToolName: string | null;
  discoverable: boolean;
  rejectionReasons: Array<{ reason: string; field: string; message: string }>;
  /** Text for weight B: the seller's tags (`extensions.bazaar.tags`) and the MCP tool name. */
  tagsText: string;
  /** Text for weight D: schema property names, titles and descriptions, route literals, the URL's host and path. */
  schemaText: string;
  metadataQuality: number;
  schemaCompleteness: number;
  sellerVerified: boolean;
}

const MAX_SCHEMA_TEXT = 8000;

export function buildSearchDocument(snap: IndexSnapshot, networks: NetworkRegistry): SearchDocument | null {
  const r = snap.resource;
  if (!r || r.status !== 'active') return null;
  // The stored terms checked again as a seller would submit them (the amount in its shortest form).
  const result = checkCatalogTerms(submittedTerms(r), {
    networks,
    seller: snap.seller,
    callerSellerId: null,
    trusted: snap.declaration?.trusted ?? false,
    payToDeclared: snap.declaration?.payTo === r.payTo,
    payToOwner: snap.payToOwner,
    domainVerifiedByOther: snap.domainVerifiedByOther,
    hostOwner: snap.hostOwner,
    // The first resource to offer a tool on a server keeps it; later ones are ambiguous.
    mcpToolConflict: snap.mcpToolOwner && snap.mcpToolOwner.resourceId < r.id ? snap.mcpToolOwner.resourceId : null,
  });
  const toolName = r.type === 'mcp' ? mcpToolName(r.extensions) : null;
  return {
    resourceId: r.id,
    sellerId: r.sellerId,
    versionId: r.versionId,
    version: r.version,
    type: r.type,
    name: r.name,
    description: r.description,
    url: r.url,
    routeTemplate: r.routeTemplate,
    network: r.network,
    payTo: r.payTo,
    assetCode: r.assetCode,
    assetIssuer: r.assetIssuer,
    amount: r.amount,
    status: r.status,
    extensionNames: Object.keys(r.extensions ?? {})
      .filter((k) => k === 'bazaar' || k === 'mcp')
      .sort(),
    mcpToolName: toolName,
    discoverable: result.errors.length === 0,
    rejectionReasons: result.errors.map((e: ValidationIssue) => ({
      reason: issueReason(e),
      field: e.field,
      message: e.message,
    })),
    tagsText: tagsText(r, toolName),
    schemaText: `${schemaText(r, toolName)} ${urlWords(r.url)}`.trim(),
    metadataQuality: metadataQuality(r),
    schemaCompleteness: schemaCompleteness(r),
    sellerVerified: snap.seller?.domainVerified ?? false,
  };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function collectSchemaWords(node: unknown, out: string[], depth = 0): void {
  if (depth > 8 || out.join(' ').length > MAX_SCHEMA_TEXT) return;
  if (Array.isArray(node)) {
    for (const n of node) collectSchemaWords(n, out, depth + 1);
    return;
  }
  if (!isObj(node)) return;
  for (const key of ['title', 'description'] as const) if (typeof node[key] === 'string') out.push(node[key] as string);
  if (isObj(node.properties)) {
    for (const [name, sub] of Object.entries(node.properties)) {
      out.push(name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' '));
      collectSchemaWords(sub, out, depth + 1);
    }
  }
  for (const key of ['items', 'anyOf', 'oneOf', 'allOf', '$defs'] as const) {
    const v = node[key];
    if (key === '$defs' && isObj(v)) collectSchemaWords(Object.values(v), out, depth + 1);
    else if (v !== undefined) collectSchemaWords(v, out, depth + 1);
  }
}

function schemaText(r: Resource, toolName: string | null): string {
  const words: string[] = [];
  collectSchemaWords(r.inputSchema, words);
  collectSchemaWords(r.outputSchema, words);
  if (toolName) words.push(toolName.replace(/[_.-]+/g, ' '));
  const mcp = r.extensions?.mcp;
  if (isObj(mcp) && typeof mcp.description === 'string') words.push(mcp.description);
  words.push(
    ...r.routeTemplate
      .split('/')
      .filter((s) => s && !s.startsWith('{'))
      .map((s) => s.replace(/[_.~-]+/g, ' ')),
  );
  return words.join(' ').slice(0, MAX_SCHEMA_TEXT);
}

/** Tags a seller gave in `extensions.bazaar.tags` (strings, at most 20 of 40 characters) and the MCP tool name. */
function tagsText(r: Resource, toolName: string | null): string {
  const bazaar = r.extensions?.bazaar;
  const tags =
    isObj(bazaar) && Array.isArray(bazaar.tags)
      ? bazaar.tags
          .filter((t): t is string => typeof t === 'string')
          .slice(0, 20)
          .map((t) => t.slice(0, 40))
      : [];
  if (toolName) tags.push(toolName.replace(/[_.-]+/g, ' '));
  return tags.join(' ');
}

/** The URL's host and path as words ("https://api.geo.example/v1/reverse-geocode" -> "api geo example v1 reverse geocode"). */
export function urlWords(url: string): string {
  return url
    .replace(/^[a-z]+:\/\//i, '')
    .replace(/[?#].*$/, '')
    .replace(/[/._~{}:=&+-]+/g, ' ')
    .trim()
    .slice(0, 500);
}

/** Metadata quality in [0, 1]: a descriptive name and description, https, Bazaar call metadata. */
export function metadataQuality(r: Resource): number {
  const bazaar = r.extensions?.bazaar;
  const parts = [
    Math.min(r.name.trim().length / 12, 1),
    Math.min(r.description.trim().length / 120, 1),
    r.url.startsWith('https://') ? 1 : 0,
    isObj(bazaar) && isObj(bazaar.info) ? 1 : 0,
    isObj(bazaar) && isObj(bazaar.schema) ? 1 : 0,
  ];
  return round(parts.reduce((a, b) => a + b, 0) / parts.length);
}

/** Schema completeness in [0, 1]: typed, described properties, required fields, a described output. */
export function schemaCompleteness(r: Resource): number {
  const score = (s: Obj): number => {
    const props = isObj(s.properties) ? Object.values(s.properties) : [];
    if (props.length === 0) return typeof s.type === 'string' ? 0.25 : 0;
    const typed =
      props.filter((p) => isObj(p) && (p.type !== undefined || p.$ref !== undefined || p.enum !== undefined)).length /
      props.length;
    const described =
      props.filter((p) => isObj(p) && typeof p.description === 'string' && p.description.trim() !== '').length /
      props.length;
    const required = Array.isArray(s.required) && s.required.length > 0 ? 1 : 0;
    return 0.25 + 0.75 * ((typed + described + required) / 3);
  };
  return round((score(r.inputSchema) + score(r.outputSchema)) / 2);
}

const round = (n: number) => Math.round(n * 10000) / 10000;

/** The search index's port (implemented by data/search-index-repository.ts). */
export type IndexOutcome = 'indexed' | 'rejected' | 'removed';

/**
 * Writes of the search index. `indexResource` runs in one transaction under a per-resource advisory lock: it reads
 * the resource and every fact the anti-poisoning rules need, lets the caller build the document, writes (or
 * deletes) it, refreshes its ranking signals and marks the resource's catalog events indexed. Running it twice
 * gives the same result (idempotent).
 */
export interface SearchIndexRepository {
  resourceOfEvent(catalogEventId: string): Promise<string | null>;
  indexResource(resourceId: string, build: (snap: IndexSnapshot) => SearchDocument | null): Promise<IndexOutcome>;
  /**
   * indexResource for several resources in one transaction (one lock statement, one snapshot read, one upsert, one
   * signal refresh, one catalog-event update and one lag recompute for the whole batch).
   */
  indexResources(
    resourceIds: string[],
    build: (snap: IndexSnapshot) => SearchDocument | null,
  ): Promise<Map<string, IndexOutcome>>;
  /** Resources with catalog events left unindexed for at least `olderThanSeconds` (lost or failed jobs). */
  staleResources(olderThanSeconds: number, limit: number): Promise<string[]>;
  /**
   * Refreshes seller verification, settlement success (30 days) and uptime of one document, or runs an incremental
   * sync pass: the documents whose inputs changed or left a time window since the last pass, in bounded batches (it
   * also records the pass in search_signal_sync once its queue is drained). Returns documents rewritten.
   */
  refreshSignals(resourceId?: string): Promise<number>;
  /**
   * Recounts the vocabulary's document frequencies from the index (ts_stat) when the last recount is older than
   * `olderThanSeconds` (0: now). Returns whether it ran.
   */
  refreshVocabulary(olderThanSeconds: number): Promise<boolean>;
  /** Deletes observed Bazaar resources without a payment for 30 days (they already left the list). Returns rows
   * deleted. */
  purgeObserved(): Promise<number>;
  /** Records that the index is behind (a catalog change was recorded); a no-op while it already is. */
  markBehind(): Promise<void>;
  /**
   * Recomputes when the oldest unindexed catalog event was recorded (search_index_state, read by every search). Every
   * indexResource does it as its last step; the search-sync pass calls this. Writes only when the value changes.
   */
  recordLag(): Promise<void>;
  counts(): Promise<{
    resources: number;
    activeSellers: number;
    lagSeconds: number;
    volume: Array<{ network: string; asset: string; amount: number }>;
  }>;
}
