import type { Area, AreaContext } from './area';
import { createTrustRepository } from '../data/trust-repository';
import { createLivenessRunner, type LivenessRunner } from '../domain/trust/liveness-runner';
import { createTrustService, type TrustService } from '../domain/trust/trust-service';
import { DEFAULT_TRUST_SETTINGS, type LivenessFetch, type TrustSettings } from '../domain/trust/types';
import { createLivenessWorker } from '../jobs/liveness-worker';
import { createSafeFetcher } from '../net';

export interface TrustOptions {
  /** Run the liveness worker (main: yes, LIVENESS_PROBES; default no, so test services never probe unasked). */
  liveness?: boolean;
  /** Agenda interval of the liveness worker. Default '1 minute'. */
  every?: string;
  settings?: Partial<TrustSettings>;
  /** The probe fetcher; default the SSRF-safe fetcher reading 402 answers (tests allow loopback http). */
  probeFetch?: LivenessFetch;
}

export interface TrustArea extends Area {
  service: TrustService;
  runner: LivenessRunner;
  settings: TrustSettings;
}

/** The trust area (issue #33): the liveness worker, the trust reads and the seller's confirmation of changed terms. */
export function createTrustArea(ctx: AreaContext, opts: TrustOptions = {}): TrustArea {
  const repo = createTrustRepository(ctx.db);
  const settings: TrustSettings = { ...DEFAULT_TRUST_SETTINGS, ...opts.settings };
  const runner = createLivenessRunner({
    repo,
    settings,
    fetch: opts.probeFetch ?? createSafeFetcher({ readBodyOfStatuses: [200, 402], timeoutMs: 5000 }),
    contractId: (network, code, issuer) => ctx.networks.asset(network, code, issuer)?.contractId ?? null,
  });
  const service = createTrustService({
    repo,
    sellerOf: async (id) => (await ctx.resources.get(id).catch(() => null))?.sellerId ?? null,
  });
  return {
    service,
    runner,
    settings,
    workers: opts.liveness ? [createLivenessWorker({ runner, every: opts.every, logger: ctx.logger })] : [],
  };
}
