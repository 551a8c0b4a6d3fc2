import { failedCheck, type Check } from './health';

/** The current health record of one network, as the network-health worker writes it (table network_health). */
export interface NetworkHealthRecord {
  network: string;
  rpcUp: boolean;
  rpcHealthy: boolean;
  latencyMs: number | null;
  latestLedger: number | null;
  /** When the observed ledger sequence last advanced. */
  ledgerAdvancedAt: Date | null;
  consecutiveErrors: number;
  checkedAt: Date;
}

export interface NetworkHealthRules {
  /** Expected ledger close interval of the network (5 s on Stellar). Stale after 3 intervals without a new ledger. */
  ledgerCloseMs: number;
  /** A record older than this is not trusted (the worker stopped): NOT_PROBED_YET. Default 60 s. */
  maxRecordAgeMs?: number;
}

export const STALE_CLOSE_INTERVALS = 3;

/**
 * The next record after one probe: the ledger "advanced" when the sequence grew, so a stuck RPC that answers the
 * same sequence again keeps the old `ledgerAdvancedAt` and becomes stale.
 */
export function nextRecord(
  previous: NetworkHealthRecord | null,
  network: string,
  probe: { up: boolean; healthy: boolean; latencyMs: number; latestLedger: number | null },
  now: Date,
): NetworkHealthRecord {
  const advanced =
    probe.latestLedger !== null && (previous?.latestLedger == null || probe.latestLedger > previous.latestLedger);
  return {
    network,
    rpcUp: probe.up,
    rpcHealthy: probe.healthy,
    latencyMs: probe.latencyMs,
    latestLedger: probe.latestLedger ?? previous?.latestLedger ?? null,
    ledgerAdvancedAt: advanced ? now : (previous?.ledgerAdvancedAt ?? null),
    consecutiveErrors: probe.up ? 0 : (previous?.consecutiveErrors ?? 0) + 1,
    checkedAt: now,
  };
}

/** The /health check of one network from its record. */
export function evaluateNetwork(record: NetworkHealthRecord | null, rules: NetworkHealthRules, now: Date): Check {
  if (!record || now.getTime() - record.checkedAt.getTime() > (rules.maxRecordAgeMs ?? 60_000))
    return failedCheck('degraded', 'NOT_PROBED_YET');
  const extra = {
    ...(record.latencyMs === null ? {} : { latencyMs: Math.round(record.latencyMs * 10) / 10 }),
    ...(record.latestLedger === null ? {} : { latestLedger: record.latestLedger }),
    ...(record.ledgerAdvancedAt
      ? { ledgerAgeSeconds: Math.max(0, (now.getTime() - record.ledgerAdvancedAt.getTime()) / 1000) }
      : {}),
    checkedAt: record.checkedAt,
  };
  if (!record.rpcUp) return { ...failedCheck('down', 'RPC_UNREACHABLE'), ...extra };
  if (!record.rpcHealthy) return { ...failedCheck('degraded', 'RPC_UNHEALTHY'), ...extra };
  const staleAfterMs = STALE_CLOSE_INTERVALS * rules.ledgerCloseMs;
  // Measured at the probe (checkedAt), so the probe interval does not count as staleness between two probes.
  if (!record.ledgerAdvancedAt || record.checkedAt.getTime() - record.ledgerAdvancedAt.getTime() > staleAfterMs)
    return { ...failedCheck('degraded', 'LEDGER_STALE'), ...extra };
  return { status: 'ok', ...extra };
}
