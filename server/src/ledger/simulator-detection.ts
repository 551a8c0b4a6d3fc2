import type { Logger } from '../logger';
import type { NetworkRegistry } from '../domain/network-registry';
import { sorobanRpc } from './soroban-rpc';

/** What this service's local network simulator answers in getVersionInfo (local-network/rpc-methods.ts). */
const SIMULATOR_MARK = 'local-simulation';

/**
 * Evidence must never claim more than what happened: a configured RPC URL that is in fact this service's local
 * network simulator (started on its own, e.g. `npm run local-network` or the benches, and given as
 * STELLAR_TESTNET_RPC_URL) proves only local simulation, not testnet settlement. At start every configured
 * network's RPC is asked `getVersionInfo` (in the background, retried every `retryMs` until it answers); one that
 * identifies as the simulator is marked local, so its settlements, receipts and conformance runs are labelled
 * `local_simulation`. Until the RPC has answered nothing can settle on it, so no settlement is labelled before.
 */
export function detectLocalSimulators(
  registry: NetworkRegistry,
  logger: Logger,
  opts: { retryMs?: number; timeoutMs?: number } = {},
): { stop(): void; settled: Promise<void> } {
  const retryMs = opts.retryMs ?? 5_000;
  const timeoutMs = opts.timeoutMs ?? 5_000;
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  const checks = registry
    .list()
    .filter((n) => n.rpcUrl && !n.local)
    .map(async (n) => {
      while (!stopped) {
        try {
          const raw = await sorobanRpc(n.rpcUrl!, timeoutMs).versionInfo();
          if (
            raw.commitHash === SIMULATOR_MARK ||
            raw.captiveCoreVersion === SIMULATOR_MARK ||
            raw.commit_hash === SIMULATOR_MARK
          ) {
            registry.markLocal(n.network);
            logger.info('the configured RPC is the local network simulator: evidence is local simulation', {
              network: n.network,
            });
          }
          return;
        } catch {
          await new Promise<void>((resolve) => {
            const t = setTimeout(() => {
              timers.delete(t);
              resolve();
            }, retryMs);
            timers.add(t);
          });
        }
      }
    });
  return {
    settled: Promise.all(checks).then(() => undefined),
    stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
    },
  };
}
