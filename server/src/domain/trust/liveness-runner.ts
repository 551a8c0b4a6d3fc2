import { driftOf, nextState, observe } from './liveness';
import type { LivenessFetch, LivenessTarget, TrustRepository, TrustSettings } from './types';

export interface LivenessRunnerDeps {
  repo: TrustRepository;
  fetch: LivenessFetch;
  settings: TrustSettings;
  /** The Soroban contract id of a listed asset (a 402 may name the asset by it), or null. */
  contractId(network: string, assetCode: string, assetIssuer: string): string | null;
  now?: () => Date;
  observed?(outcome: { live: boolean; seconds: number }): void;
}

export interface PassResult {
  probed: number;
  live: number;
  drifted: number;
}

/**
 * One pass of the liveness worker: the resources due, at most what the overall rate allows in `passMs`, probed with
 * bounded concurrency and at most one probe per host every `perHostIntervalMs` (a host with many listings is probed
 * slower, never harder). Never pays: every request is unpaid.
 */
export function createLivenessRunner(deps: LivenessRunnerDeps) {
  const s = deps.settings;
  const now = deps.now ?? (() => new Date());
  const lastByHost = new Map<string, number>();

  async function probeOne(target: LivenessTarget): Promise<{ live: boolean; drifted: boolean }> {
    const due = Math.max(Date.now(), (lastByHost.get(target.host) ?? 0) + s.perHostIntervalMs);
    lastByHost.set(target.host, due);
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    const started = process.hrtime.bigint();
    const obs = await observe(
      deps.fetch,
      target,
      deps.contractId(target.network, target.assetCode, target.assetIssuer),
    );
    const state = nextState(target.state, obs, now(), s);
    const drift = driftOf(target, obs).filter(
      (d) => !target.knownDrift.some((k) => k.kind === d.kind && k.observed === d.observed),
    );
    await deps.repo.record(target, state, obs, drift);
    deps.observed?.({ live: obs.live, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
    return { live: obs.live, drifted: drift.length > 0 };
  }

  return {
    /** Probes the due resources that fit in `passMs` at the overall rate; answers what it did. */
    async pass(passMs = 60_000): Promise<PassResult> {
      const budget = Math.max(1, Math.floor((s.maxPerMinute * passMs) / 60_000));
      const targets = await deps.repo.dueTargets(budget, now());
      const result: PassResult = { probed: 0, live: 0, drifted: 0 };
      // Overall rate: start probe i no earlier than i / rate after the pass began.
      const startedAt = Date.now();
      const gapMs = 60_000 / s.maxPerMinute;
      let next = 0;
      const worker = async () => {
        while (next < targets.length) {
          const i = next++;
          const wait = startedAt + i * gapMs - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const r = await probeOne(targets[i]);
          result.probed += 1;
          if (r.live) result.live += 1;
          if (r.drifted) result.drifted += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(s.concurrency, Math.max(1, targets.length)) }, worker));
      await deps.repo.refreshPriceOutliers(s.outlierFactor, s.outlierMinComparables);
      // Forget hosts not probed for a while (the map stays bounded by the hosts of one pass).
      const cutoff = Date.now() - Math.max(60_000, s.perHostIntervalMs);
      for (const [h, t] of lastByHost) if (t < cutoff) lastByHost.delete(h);
      return result;
    },
  };
}

export type LivenessRunner = ReturnType<typeof createLivenessRunner>;
