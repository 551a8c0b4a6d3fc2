import client from 'prom-client';

/**
 * Discovery metrics (issue: discovery), defined on the one registry by createMetrics. The gauges read the database
 * when /metrics is scraped through a snapshot source the discovery area binds (`bindSnapshot`); until then they
 * report nothing new.
 */
export interface DiscoverySnapshot {
  resources: number;
  activeSellers: number;
  lagSeconds: number;
  volume: Array<{ network: string; asset: string; amount: number }>;
}

export interface DiscoveryMetrics {
  resources: client.Gauge;
  activeSellers: client.Gauge;
  catalogEvents: client.Counter<'kind'>;
  validationFailures: client.Counter<'reason'>;
  routeTemplateFailures: client.Counter;
  domainVerificationFailures: client.Counter;
  searchRequests: client.Counter;
  searchLatency: client.Histogram;
  emptySearchResults: client.Counter;
  partialResults: client.Counter<'endpoint'>;
  indexFreshness: client.Gauge;
  paymentVolume: client.Gauge<'network' | 'asset'>;
  indexRejections: client.Counter<'reason'>;
  bindSnapshot(source: () => Promise<DiscoverySnapshot>): void;
}

/** Label values are bounded: a supported network, else `unsupported` (never a caller-given string). */
const SUPPORTED_NETWORKS = new Set(['stellar:testnet', 'stellar:pubnet']);
export const networkLabel = (network: string): string => (SUPPORTED_NETWORKS.has(network) ? network : 'unsupported');

const SEARCH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export function defineDiscoveryMetrics(registry: client.Registry): DiscoveryMetrics {
  let source: (() => Promise<DiscoverySnapshot>) | null = null;
  // One database read per scrape, shared by the four gauges that collect from it.
  let pending: Promise<DiscoverySnapshot | null> | null = null;
  const snapshot = (): Promise<DiscoverySnapshot | null> => {
    if (!source) return Promise.resolve(null);
    if (!pending) {
      pending = source()
        .catch(() => null)
        .finally(() => setTimeout(() => (pending = null), 0));
    }
    return pending;
  };
  const registers = [registry];
  return {
    resources: new client.Gauge({
      name: 'discovery_indexed_resources',
      help: 'Resources discoverable in the search index',
      registers,
      async collect() {
        const s = await snapshot();
        if (s) this.set(s.resources);
      },
    }),
    activeSellers: new client.Gauge({
      name: 'discovery_active_sellers',
      help: 'Sellers with at least one discoverable resource',
      registers,
      async collect() {
        const s = await snapshot();
        if (s) this.set(s.activeSellers);
      },
    }),
    catalogEvents: new client.Counter({
      name: 'discovery_catalog_events_total',
      help: 'Catalog events recorded by the discovery API, by kind',
      labelNames: ['kind'],
      registers,
    }),
    validationFailures: new client.Counter({
      name: 'discovery_catalog_validation_failures_total',
      help:
        'Validate and catalog requests that failed, by reason (poisoning class); one count per distinct reason ' +
        'per request',
      labelNames: ['reason'],
      registers,
    }),
    routeTemplateFailures: new client.Counter({
      name: 'discovery_route_template_failures_total',
      help: 'Validate and catalog requests refused for an unsafe or malformed route template',
      registers,
    }),
    domainVerificationFailures: new client.Counter({
      name: 'discovery_domain_verification_failures_total',
      help: 'Validate and catalog requests refused because the seller domain is not verified',
      registers,
    }),
    searchRequests: new client.Counter({
      name: 'discovery_search_requests_total',
      help: 'Search requests answered',
      registers,
    }),
    searchLatency: new client.Histogram({
      name: 'discovery_search_duration_seconds',
      help: 'Search latency inside the service (query and ranking)',
      buckets: SEARCH_BUCKETS,
      registers,
    }),
    emptySearchResults: new client.Counter({
      name: 'discovery_search_empty_results_total',
      help: 'Searches that returned no result',
      registers,
    }),
    partialResults: new client.Counter({
      name: 'discovery_partial_results_total',
      help: 'Listing and search pages answered with partialResults true',
      labelNames: ['endpoint'],
      registers,
    }),
    indexFreshness: new client.Gauge({
      name: 'discovery_index_lag_seconds',
      help: 'Seconds the search index lags the catalog (age of the oldest unindexed catalog event; 0 when up to date)',
      registers,
      async collect() {
        const s = await snapshot();
        if (s) this.set(s.lagSeconds);
      },
    }),
    paymentVolume: new client.Gauge({
      name: 'discovery_payment_volume',
      help: 'Settled payment volume in asset units, by network and asset code',
      labelNames: ['network', 'asset'],
      registers,
      async collect() {
        const s = await snapshot();
        if (!s) return;
        this.reset();
        for (const v of s.volume)
          this.inc(
            { network: networkLabel(v.network), asset: /^[A-Za-z0-9]{1,12}$/.test(v.asset) ? v.asset : 'other' },
            v.amount,
          );
      },
    }),
    indexRejections: new client.Counter({
      name: 'discovery_index_rejections_total',
      help: 'Resources the indexing worker kept out of discovery (anti-poisoning rules at indexing time), by reason',
      labelNames: ['reason'],
      registers,
    }),
    bindSnapshot(fn) {
      source = fn;
    },
  };
}
