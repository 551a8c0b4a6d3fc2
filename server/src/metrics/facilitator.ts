import type client from 'prom-client';

/** Facilitator and ledger metrics (issue: facilitator). Defined on the one registry by createMetrics. */
export type FacilitatorMetrics = Record<string, never>;

export function defineFacilitatorMetrics(_registry: client.Registry): FacilitatorMetrics {
  return {};
}
