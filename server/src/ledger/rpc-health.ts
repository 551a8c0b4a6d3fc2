import type { NetworkRegistry } from '../domain/network-registry';
import { sorobanRpc } from './soroban-rpc';
import type { RpcProbe } from '../domain/operations/network-health-monitor';

export type { RpcProbe } from '../domain/operations/network-health-monitor';

/**
 * Asks a Soroban RPC server for getHealth and getLatestLedger, each bounded by the timeout (an RPC that accepts the
 * connection and never answers counts as down after it).
 */
export async function probeRpc(rpcUrl: string, timeoutMs = 3000): Promise<RpcProbe> {
  const started = process.hrtime.bigint();
  const ms = () => Number(process.hrtime.bigint() - started) / 1e6;
  let errors = 0;
  let error: string | null = null;
  let healthy = false;
  let latestLedger: number | null = null;
  const rpc = sorobanRpc(rpcUrl, timeoutMs);
  try {
    const health = await rpc.health();
    healthy = health.status === 'healthy';
    latestLedger = typeof health.latestLedger === 'number' ? health.latestLedger : null;
  } catch (err) {
    errors += 1;
    error = (err as Error).message;
  }
  try {
    const latest = await rpc.latestLedger();
    if (typeof latest.sequence === 'number') latestLedger = latest.sequence;
    else throw new Error('getLatestLedger answered no sequence');
  } catch (err) {
    errors += 1;
    error ??= (err as Error).message;
  }
  return { up: errors === 0, healthy: errors === 0 && healthy, latencyMs: ms(), latestLedger, errors, error };
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
