import { driftOf, nextState, observe } from './liveness';
import type { LivenessFetch, LivenessTarget, ProbeOutcome, TrustRepository, TrustSettings } from './types';

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
  /** Outcomes written (under their claim). */
  written: number;
  /** Outcomes refused because another process claimed the listing since (not counted: its own probe counts). */
  refused: number;
  /** Claimed targets handed back unprobed: more of one host than its per-host bound lets a pass probe. */
  deferred: number;
}

/** SQLSTATE of a deadlock or a serialization failure: the batch is written again once. */
const RETRYABLE = new Set(['40P01', '40001']);

/**
 * Collects probe outcomes and writes them `size` at a time (or after `delayMs`), one batch after the other. A batch
 * that fails (after one retry of a deadlock) is not written: its listings stay claimed until the lease ends, then are
 * probed again; nothing half-written is left (one transaction per batch).
 */
function createBatchWriter(repo: TrustRepository, size: number, delayMs: number) {
  let buffer: ProbeOutcome[] = [];
  let timer: NodeJS.Timeout | null = null;
  let chain: Promise<void> = Promise.resolve();
  let error: unknown = null;
  const totals = { written: 0, refused: 0 };

  const write = async (batch: ProbeOutcome[]) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await repo.recordBatch(batch);
        totals.written += r.written.length;
        totals.refused += batch.length - r.written.length;
        return;
      } catch (err) {
        if (attempt < 2 && RETRYABLE.has(String((err as { code?: unknown }).code))) continue;
        error ??= err;
        return;
      }
    }
  };
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (buffer.length > 0) {
      const batch = buffer;
      buffer = [];
      chain = chain.then(() => write(batch));
    }
    return chain;
  };
  return {
    add(outcome: ProbeOutcome) {
      buffer.push(outcome);
      if (buffer.length >= size) void flush();
      else timer ??= setTimeout(() => void flush(), delayMs);
    },
    /** Writes what is left; throws the first batch error once every batch is done. */
    async close() {
      await flush();
      if (error) throw error;
      return totals;
    },
  };
}

/**
 * Orders a pass's targets so hosts alternate (round robin over hosts, each host's own order kept), keeping at most
 * `perHost` of one host: a host with many listings cannot hold every probe slot waiting on its own per-host gap, and
 * its targets beyond what the pass can probe at that gap are handed back.
 */
export function spreadHosts(
  targets: LivenessTarget[],
  perHost: number,
): { targets: LivenessTarget[]; excess: LivenessTarget[] } {
  const byHost = new Map<string, LivenessTarget[]>();
  for (const t of targets) {
    const list = byHost.get(t.host);
    if (list) list.push(t);
    else byHost.set(t.host, [t]);
  }
  const out: LivenessTarget[] = [];
  const excess: LivenessTarget[] = [];
  const lists = [...byHost.values()];
  for (const list of lists) excess.push(...list.splice(perHost));
  for (let round = 0; out.length + excess.length < targets.length; round++)
    for (const list of lists) if (round < list.length) out.push(list[round]);
  return { targets: out, excess };
}

/**
 * One pass of the liveness worker: claims the resources due, at most what the overall rate allows in `passMs`,
 * probes them with bounded concurrency and at most one probe per host every `perHostIntervalMs` (a host with many
 * listings is probed slower, never harder), and writes the outcomes in batches under their claim. Never pays: every
 * request is unpaid. Several processes may run passes at once: each probes only what it claimed.
 */
export function createLivenessRunner(deps: LivenessRunnerDeps) {
  const s = deps.settings;
  const now = deps.now ?? (() => new Date());
  const lastByHost = new Map<string, number>();
  // The decoy flags are stored: after a restart they are next recomputed outlierRefreshMs later.
  let outliersAt = Date.now();

  async function probeOne(target: LivenessTarget): Promise<ProbeOutcome> {
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
    deps.observed?.({ live: obs.live, seconds: Number(process.hrtime.bigint() - started) / 1e9 });
    return { target, state, obs, drift };
  }

  return {
    /** Probes the due resources that fit in `passMs` at the overall rate; answers what it did. */
    async pass(passMs = 60_000): Promise<PassResult> {
      const budget = Math.max(1, Math.floor((s.maxPerMinute * passMs) / 60_000));
      const at = now();
      // The lease outlasts the pass (its probes fit in passMs, each bounded by the fetch timeout): a listing whose
      // outcome was never written (the process died) is due again when it ends.
      const claimed = await deps.repo.claimDue(budget, at, new Date(at.getTime() + 2 * passMs + 30_000));
      const perHost = s.perHostIntervalMs > 0 ? Math.max(1, Math.floor(passMs / s.perHostIntervalMs)) : Infinity;
      const { targets, excess } = spreadHosts(claimed, perHost);
      if (excess.length > 0) await deps.repo.release(excess, at);
      const result: PassResult = { probed: 0, live: 0, drifted: 0, written: 0, refused: 0, deferred: excess.length };
      const writer = createBatchWriter(deps.repo, Math.max(1, s.writeBatch), s.writeDelayMs);
      // Overall rate: start probe i no earlier than i / rate after the pass began.
      const startedAt = Date.now();
      const gapMs = 60_000 / s.maxPerMinute;
      let next = 0;
      const worker = async () => {
        while (next < targets.length) {
          const i = next++;
          const wait = startedAt + i * gapMs - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const outcome = await probeOne(targets[i]);
          writer.add(outcome);
          result.probed += 1;
          if (outcome.obs.live) result.live += 1;
          if (outcome.drift.length > 0) result.drifted += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(s.concurrency, Math.max(1, targets.length)) }, worker));
      const totals = await writer.close();
      result.written = totals.written;
      result.refused = totals.refused;
      if (Date.now() - outliersAt >= s.outlierRefreshMs) {
        outliersAt = Date.now();
        await deps.repo.refreshPriceOutliers(s.outlierFactor, s.outlierMinComparables);
      }
      // Forget hosts not probed for a while (the map stays bounded by the hosts of one pass).
      const cutoff = Date.now() - Math.max(60_000, s.perHostIntervalMs);
      for (const [h, t] of lastByHost) if (t < cutoff) lastByHost.delete(h);
      return result;
    },
  };
}

export type LivenessRunner = ReturnType<typeof createLivenessRunner>;
