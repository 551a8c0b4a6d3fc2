/** Conformance runs: records and the store port (data/operations-repository.ts implements it). */
export type CheckOutcome = 'passed' | 'failed' | 'skipped';

export interface ConformanceCheck {
  name: string;
  outcome: CheckOutcome;
  /** Why it failed or was skipped: an error code and a short sentence; null when it passed. */
  reason: string | null;
  resourceId?: string;
  durationMs?: number;
}

export type RunStatus = 'queued' | 'running' | 'passed' | 'failed';

export interface ConformanceRun {
  id: string;
  network: string;
  trigger: 'schedule' | 'manual';
  status: RunStatus;
  /** local_simulation (full cycle on the local network), testnet_verification or mainnet_verification. */
  evidence: string;
  checks: ConformanceCheck[];
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** A cataloged http resource the runner probes: an unpaid request must answer 402 with these terms. */
export interface ProbeTarget {
  id: string;
  url: string;
  network: string;
  payTo: string;
  assetCode: string;
  assetIssuer: string;
  amount: string;
}

export interface ResourceConformance {
  state: 'unknown' | 'passing' | 'failing';
  checkedAt: Date | null;
  reason: string | null;
  /** Share of passed probes over the last 7 days; null before the first probe. */
  uptime: number | null;
}

export interface ConformanceRunStore {
  createRun(run: {
    id: string;
    network: string;
    trigger: ConformanceRun['trigger'];
    evidence: string;
  }): Promise<ConformanceRun>;
  /** queued -> running; false when another process took it (or it is not queued). */
  startRun(id: string): Promise<boolean>;
  finishRun(id: string, status: 'passed' | 'failed', checks: ConformanceCheck[]): Promise<void>;
  findRun(id: string): Promise<ConformanceRun | null>;
  /** Newest first; `before` is the id of the last run of the previous page. */
  listRuns(limit: number, before?: string): Promise<ConformanceRun[]>;
  /** The latest finished run of each network. */
  latestRuns(): Promise<ConformanceRun[]>;
  /** Queued or running runs older than this are marked failed (a process died mid-run). */
  recoverStuckRuns(olderThanSeconds: number): Promise<void>;
  probeTargets(network: string, limit: number): Promise<ProbeTarget[]>;
  recordProbe(resourceId: string, runId: string | null, passed: boolean, reason: string | null): Promise<void>;
  resourceConformance(resourceId: string): Promise<ResourceConformance>;
}
