/**
 * Health of the service: `down` when the database (the system of record) is unreachable, `degraded` when a job
 * backend or a ledger RPC is, `ok` otherwise.
 */
export interface Check {
  status: 'ok' | 'degraded' | 'down';
  latencyMs?: number;
  message?: string;
}

export interface HealthProbes {
  database(): Promise<Check>;
  jobs(): Promise<Check>;
  ledger(): Promise<Record<string, Check>>;
}

export interface HealthReport {
  status: 'ok' | 'degraded' | 'down';
  checks: { database: Check; jobs: Check; ledger: Record<string, Check> };
  uptimeSeconds: number;
  time: Date;
}

export async function healthReport(probes: HealthProbes, startedAt: number): Promise<HealthReport> {
  const [database, jobs, ledger] = await Promise.all([probes.database(), probes.jobs(), probes.ledger()]);
  const others = [jobs, ...Object.values(ledger)];
  const status = database.status === 'down' ? 'down' : [database, ...others].some((c) => c.status !== 'ok') ? 'degraded' : 'ok';
  return { status, checks: { database, jobs, ledger }, uptimeSeconds: Math.round((Date.now() - startedAt) / 1000), time: new Date() };
}
