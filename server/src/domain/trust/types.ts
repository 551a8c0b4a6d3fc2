/** Trust signals of a listing (issue #33): measured liveness, owner, price drift, honest price, demand. */
import type { Stroops } from '../amount';

/** What a liveness probe fetches with: the SSRF-safe fetcher, reading 402 bodies; a POST for MCP JSON-RPC. */
export type LivenessFetch = (
  url: string,
  init?: { method: 'POST'; body: string; contentType: string; accept?: string },
) => Promise<{ status: number; body: string; headers?: Record<string, string> }>;

/** A listed resource the liveness worker probes. */
export interface LivenessTarget {
  id: string;
  type: 'http' | 'mcp';
  url: string;
  host: string;
  network: string;
  payTo: string;
  assetCode: string;
  assetIssuer: string;
  /** The listed price. */
  amount: Stroops;
  /** MCP tools: the tool name `tools/list` must list. */
  toolName: string | null;
  /** The previous state (null: never probed). */
  state: LivenessState | null;
  /** Open drifts: a change already recorded (or confirmed as these observed values) is not recorded again. */
  knownDrift: Array<{ kind: 'price' | 'payout'; observed: string }>;
  /** The claim the target was handed out under (resource_liveness.claim): its outcome is written only under it. */
  claim: string;
}

/**
 * A change of price or payout address the live 402 shows against the listing, as recorded and shown to the seller:
 * `listed` and `observed` are text (an amount in its shortest decimal form for a price, an address for a payout).
 */
export interface Drift {
  kind: 'price' | 'payout';
  listed: string;
  observed: string;
}

/** One probe's outcome, as the worker writes it (in batches). */
export interface ProbeOutcome {
  target: LivenessTarget;
  state: LivenessState;
  obs: Observation;
  /** New drifts (not already open or confirmed with these observed values). */
  drift: Drift[];
}

/** One unpaid probe's outcome. */
export interface Observation {
  /** Answered a valid payment requirement for the listed scheme, network and asset. */
  live: boolean;
  reason: string | null;
  latencyMs: number;
  /** The payTo and amount the live requirement asked; null when not live (or its amount is not one). */
  payTo: string | null;
  amount: Stroops | null;
}

export interface LivenessState {
  /** null: not decided yet (failed fewer than failuresToDemote times and never live). */
  live: boolean | null;
  reason: string | null;
  checkedAt: Date | null;
  nextCheckAt: Date;
  deadSince: Date | null;
  dropped: boolean;
  consecutiveFailures: number;
  latenciesMs: number[];
  p50: number | null;
  p99: number | null;
  observedPayTo: string | null;
  observedAmount: Stroops | null;
}

export interface TrustSettings {
  /** Least gap between two probes of a live (or dead, not yet dropped) resource. Default 5 minutes; with many
   * listings the cycle is set by the rate instead (listings ÷ maxPerMinute). */
  intervalMs: number;
  /** Gap after a failed probe of a resource not yet demoted (a suspect, re-probed before overdue ones). Default 2
   * minutes. */
  retryMs: number;
  /** Gap between probes of a dropped resource. Default 30 minutes. */
  droppedIntervalMs: number;
  /** Failed probes in a row that make a resource dead (demoted). Default 2. */
  failuresToDemote: number;
  /** Dead this long: dropped from default results. Default 24 hours. */
  dropAfterMs: number;
  /** Probes per minute, all hosts together. Default 6,000 (100k listings every 16.7 minutes). */
  maxPerMinute: number;
  /** Minimum gap between two probes of one host. Default 1,000 ms. */
  perHostIntervalMs: number;
  /** Probes in flight at once. Default 64 (a probe mostly waits on the network: 100 a second at ~300 ms each, with
   * room for unreachable hosts holding a slot up to the fetch timeout). */
  concurrency: number;
  /** Probe outcomes written in one statement. Default 100. */
  writeBatch: number;
  /** An outcome waits at most this long for its batch to fill before it is written. Default 1,000 ms. */
  writeDelayMs: number;
  /** A price above this multiple of the median of comparable listings (same type, network, asset) is a decoy. Default
   * 50. */
  outlierFactor: number;
  /** Comparable listings needed before a price can be called a decoy. Default 5. */
  outlierMinComparables: number;
  /** Least gap between two recomputations of the decoy flags (a pass recomputes them when this much has passed;
   * they follow catalog prices, not probes, and cost a scan of every listing). Default 5 minutes. */
  outlierRefreshMs: number;
}

export const DEFAULT_TRUST_SETTINGS: TrustSettings = {
  intervalMs: 5 * 60_000,
  retryMs: 2 * 60_000,
  droppedIntervalMs: 30 * 60_000,
  failuresToDemote: 2,
  dropAfterMs: 24 * 3600_000,
  maxPerMinute: 6000,
  perHostIntervalMs: 1000,
  concurrency: 64,
  writeBatch: 100,
  writeDelayMs: 1000,
  outlierFactor: 50,
  outlierMinComparables: 5,
  outlierRefreshMs: 5 * 60_000,
};

/** The trust block shown on search results, resource reads, the x402 Bazaar list and the MCP search tool. */
export interface Trust {
  live: boolean | null;
  checkedAt: Date | null;
  uptime7d: number | null;
  latency: { p50Ms: number; p99Ms: number } | null;
  ownerVerified: boolean | null;
  domainVerified: boolean;
  priceDrift: boolean;
  payoutChanged: boolean;
  priceOutlier: boolean;
  /** Most of the last 30 days' settled calls (at least 3) came from wallets the seller controls. */
  selfDealing: boolean;
  demoted: boolean;
  payers30d: number;
  calls30d: number;
  settledByUs: boolean;
}

/** Storage of the liveness worker and the trust reads (data/trust-repository.ts). */
export interface TrustRepository {
  /**
   * Claims the resources due for a probe, at most `limit`: suspects (failed once, not yet demoted) first, then never
   * probed, then the longest overdue. A claimed row's next check moves to `leaseUntil` and its claim is bumped, so
   * another process does not take it; rows another process is claiming are skipped.
   */
  claimDue(limit: number, now: Date, leaseUntil: Date): Promise<LivenessTarget[]>;
  /** Hands claimed targets back unprobed (due at `at`), if still under their claim. */
  release(targets: LivenessTarget[], at: Date): Promise<void>;
  /**
   * Writes a batch of probe outcomes in one transaction: state, the day's counters, new and resolved drifts
   * (one statement), then the search document's flags of those whose flags changed, and their scores. An outcome is
   * written only if its row still carries the target's claim (compare-and-set); answers the ids written.
   */
  recordBatch(outcomes: ProbeOutcome[]): Promise<{ written: string[]; flagsChanged: number }>;
  /** Recomputes the decoy flag of every listing against the median of comparable ones; answers how many changed. */
  refreshPriceOutliers(factor: number, minComparables: number): Promise<number>;
  trustOf(resourceIds: string[]): Promise<Map<string, Trust>>;
  /** The seller confirms the open drifts of its resource (all kinds, or one); answers how many it confirmed. */
  confirmDrift(resourceId: string, sellerId: string, kind: 'price' | 'payout' | null): Promise<number>;
  openDrifts(
    resourceId: string,
  ): Promise<Array<{ kind: 'price' | 'payout'; listed: string; observed: string; detectedAt: Date }>>;
}
