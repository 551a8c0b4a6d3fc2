import { rpc } from '@stellar/stellar-sdk';
import type { NetworkRegistry } from './network-registry';

export interface DependencyCheck {
  status: 'ok' | 'degraded' | 'down';
  latencyMs?: number;
  message?: string;
}

/** What one probe of a network's Soroban RPC saw. `error` is the raw error text: log it at debug level only. */
export interface RpcProbe {
  /** The RPC answered getHealth and getLatestLedger. */
  up: boolean;
  /** getHealth said "healthy". */
  healthy: boolean;
  latencyMs: number;
  latestLedger: number | null;
  /** How many of the two calls failed (0..2). */
  errors: number;
  error: string | null;
}

/** Asks a Soroban RPC server for getHealth and getLatestLedger, each bounded by the timeout. */
export async function probeRpc(rpcUrl: string, timeoutMs = 3000): Promise<RpcProbe> {
  const server = new rpc.Server(rpcUrl, { allowHttp: rpcUrl.startsWith('http:'), timeout: timeoutMs });
  const started = process.hrtime.bigint();
  const ms = () => Number(process.hrtime.bigint() - started) / 1e6;
  let errors = 0;
  let error: string | null = null;
  let healthy = false;
  let latestLedger: number | null = null;
  try {
    const health = await server.getHealth();
    healthy = health.status === 'healthy';
    latestLedger = health.latestLedger ?? null;
  } catch (err) {
    errors += 1;
    error = (err as Error).message;
  }
  try {
    latestLedger = (await server.getLatestLedger()).sequence;
  } catch (err) {
    errors += 1;
    error ??= (err as Error).message;
  }
  return { up: errors === 0, healthy: errors === 0 && healthy, latencyMs: ms(), latestLedger, errors, error };
}

/** Backwards-compatible single check (getHealth only). */
export async function checkRpc(rpcUrl: string, timeoutMs = 3000): Promise<DependencyCheck & { latestLedger?: number }> {
  const p = await probeRpc(rpcUrl, timeoutMs);
  if (!p.up) return { status: 'down', latencyMs: p.latencyMs, message: "The network's Soroban RPC does not answer." };
  return { status: p.healthy ? 'ok' : 'degraded', latencyMs: p.latencyMs, latestLedger: p.latestLedger ?? undefined };
}

/**
 * Only the scheme and host of an RPC URL: providers put API keys in the path or query (and sometimes in user
 * info), so a URL is never shown whole.
 */
export function rpcOrigin(rpcUrl: string | null): string | null {
  if (!rpcUrl) return null;
  try {
    const u = new URL(rpcUrl);
    return `${u.protocol}//${u.host}`;
  } catch {
    return null;
  }
}

/**
 * Which networks are known down, as the network-health records say. The facilitator's ledger adapter asks this
 * before every RPC call so a settle on a dead network fails fast with SERVICE_UNAVAILABLE instead of waiting for the
 * RPC timeout. It is keyed by the NetworkRegistry instance the adapter already holds, so no constructor changes;
 * a registry without a source is never "known down".
 */
export type AvailabilitySource = (network: string) => boolean;
const sources = new WeakMap<NetworkRegistry, AvailabilitySource>();

export function bindAvailability(networks: NetworkRegistry, source: AvailabilitySource): void {
  sources.set(networks, source);
}

export function networkKnownDown(networks: NetworkRegistry, network: string): boolean {
  return sources.get(networks)?.(network) ?? false;
}
