import type client from 'prom-client';

/** Discovery metrics (issue: discovery). Defined on the one registry by createMetrics. */
export type DiscoveryMetrics = Record<string, never>;

export function defineDiscoveryMetrics(_registry: client.Registry): DiscoveryMetrics {
  return {};
}
