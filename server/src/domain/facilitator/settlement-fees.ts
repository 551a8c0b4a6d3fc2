/**
 * The fees of a settlement transaction, chosen the pubnet way (issue #30): the inclusion fee is a percentile of
 * what recent ledgers' Soroban transactions bid (the RPC's getFeeStats), the resource fee is what the settle-time
 * simulation says this transaction needs; each has its own cap, and their sum the total cap. Pure: the ledger
 * adapter (ledger/soroban-ledger.ts) reads getFeeStats and simulates, this decides.
 */

/** The getFeeStats percentiles a facilitator may bid at (Soroban RPC's `sorobanInclusionFee` fields). */
export const FEE_PERCENTILES = ['p10', 'p20', 'p30', 'p40', 'p50', 'p60', 'p70', 'p80', 'p90', 'p95', 'p99'] as const;
export type FeePercentile = (typeof FEE_PERCENTILES)[number];

export interface FeeCaps {
  /** FACILITATOR_MAX_INCLUSION_FEE_STROOPS: the most bid per operation for inclusion. */
  maxInclusion: bigint;
  /** FACILITATOR_MAX_RESOURCE_FEE_STROOPS: the largest simulated resource fee accepted. */
  maxResource: bigint;
  /** FACILITATOR_MAX_FEE_STROOPS: inclusion + resource fee of the transaction. */
  maxTotal: bigint;
  /** The network's base fee: no transaction bids less. */
  baseFee: bigint;
}

/** What a settlement bids and why: recorded with the settlement, and part of its attestation. */
export interface SettlementFees {
  /** The inclusion fee bid, stroops. */
  inclusion: bigint;
  /** The resource fee from the settle-time simulation, stroops. */
  resource: bigint;
  /** The getFeeStats percentile read, and its value (null when the RPC reported no fee stats: the base fee is bid). */
  percentile: FeePercentile;
  observed: bigint | null;
}

/** A getFeeStats `sorobanInclusionFee` percentile as stroops; null when absent or not a whole number. */
export function percentileFee(
  stats: Partial<Record<FeePercentile, string>> | undefined,
  percentile: FeePercentile,
): bigint | null {
  const text = stats?.[percentile];
  return typeof text === 'string' && /^\d{1,18}$/.test(text) ? BigInt(text) : null;
}

/**
 * The fees to bid, or why the settlement must not be sent: the inclusion bid is the observed percentile (never below
 * the base fee) capped at maxInclusion, then lowered so that inclusion + resource stays within maxTotal; a resource
 * fee above maxResource, or one that leaves less than the base fee for inclusion, is refused.
 */
export function chooseSettlementFees(
  observed: bigint | null,
  resource: bigint,
  percentile: FeePercentile,
  caps: FeeCaps,
): SettlementFees | { error: string } {
  if (resource > caps.maxResource)
    return {
      error: `resource fee ${resource} stroops exceeds FACILITATOR_MAX_RESOURCE_FEE_STROOPS (${caps.maxResource})`,
    };
  if (resource + caps.baseFee > caps.maxTotal)
    return {
      error:
        `resource fee ${resource} stroops leaves no inclusion fee within FACILITATOR_MAX_FEE_STROOPS ` +
        `(${caps.maxTotal})`,
    };
  let inclusion = observed !== null && observed > caps.baseFee ? observed : caps.baseFee;
  if (inclusion > caps.maxInclusion) inclusion = caps.maxInclusion > caps.baseFee ? caps.maxInclusion : caps.baseFee;
  if (inclusion + resource > caps.maxTotal) inclusion = caps.maxTotal - resource;
  return { inclusion, resource, percentile, observed };
}
