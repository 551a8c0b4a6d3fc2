/**
 * Health of the service: `down` when the database (the system of record) is unreachable, `degraded` when a job
 * backend or a ledger network is (RPC down or unhealthy, ledger not advancing, not probed yet), `ok` otherwise.
 *
 * Every non-ok check carries a fixed `reason` and a fixed `message` per reason: raw error text (which can hold
 * hostnames, URLs with API keys, SQL) never reaches a response.
 */
export type HealthReason =
  | 'DATABASE_UNREACHABLE'
  | 'JOBS_NOT_RUNNING'
  | 'JOB_BACKEND_UNREACHABLE'
  | 'RPC_UNREACHABLE'
  | 'RPC_UNHEALTHY'
  | 'LEDGER_STALE'
  | 'NOT_PROBED_YET';

export const HEALTH_MESSAGES: Record<HealthReason, string> = {
  DATABASE_UNREACHABLE: 'The database does not answer.',
  JOBS_NOT_RUNNING: 'This process does not process background jobs.',
  JOB_BACKEND_UNREACHABLE: 'The job store does not answer.',
  RPC_UNREACHABLE: "The network's Soroban RPC does not answer.",
  RPC_UNHEALTHY: "The network's Soroban RPC reports itself unhealthy.",
  LEDGER_STALE: 'The latest ledger has not advanced for three ledger close intervals.',
  NOT_PROBED_YET: 'The network-health worker has not probed this network recently.',
};

export interface Check {
  status: 'ok' | 'degraded' | 'down';
  latencyMs?: number;
  message?: string;
  reason?: HealthReason;
  latestLedger?: number;
  ledgerAgeSeconds?: number;
  checkedAt?: Date;
}

export function failedCheck(status: 'degraded' | 'down', reason: HealthReason, latencyMs?: number): Check {
  return { status, reason, message: HEALTH_MESSAGES[reason], ...(latencyMs === undefined ? {} : { latencyMs }) };
}

export interface HealthProbes {
  database(): Promise<Check>;
  jobs(): Promise<Check>;
  ledger(): Promise<Record<string, Check>>;
}

export interface HealthReport {
  status: 'ok' | 'degraded' | 'down';
  checks: { database: Check; jobs: Check; ledger: Record<string, Check> };
  affectedNetworks: string[];
  uptimeSeconds: number;
  time: Date;
}

export async function healthReport(probes: HealthProbes, startedAt: number): Promise<HealthReport> {
  const [database, jobs, ledger] = await Promise.all([probes.database(), probes.jobs(), probes.ledger()]);
  const others = [jobs, ...Object.values(ledger)];
  const status =
    database.status === 'down' ? 'down' : [database, ...others].some((c) => c.status !== 'ok') ? 'degraded' : 'ok';
  const affectedNetworks = Object.entries(ledger)
    .filter(([, c]) => c.status !== 'ok')
    .map(([n]) => n);
  return {
    status,
    checks: { database, jobs, ledger },
    affectedNetworks,
    uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
    time: new Date(),
  };
}
