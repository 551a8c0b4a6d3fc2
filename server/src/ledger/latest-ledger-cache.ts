/**
 * The latest ledger per network, kept current from the network instead of asked for on every verify (issue #14): a
 * value is reused while it is at most `maxAgeMs` old (1 s), refreshed in the background once it is older than
 * `refreshAfterMs` (0.5 s) while requests keep coming, and fetched (one call for all waiting requests) when it is
 * older than that or missing. So a busy process asks the network about once per 0.5–1 s per network, and an idle one
 * not at all (no timer).
 *
 * Staleness: with each value comes `marginLedgers`, an upper bound of the ledgers that may have closed since it was
 * read: twice the ledgers its age would cover at the fastest rate seen between the last two reads (at least one
 * ledger per second, the fastest Stellar's clients assume), plus 2. A value is served from the cache only once such
 * a rate has been seen (two reads). The caller decides with the bounds [sequence, sequence + marginLedgers] and asks
 * the network for the exact ledger when the answer would differ within them (see verify-payment.ts).
 */
export interface RecentLedger {
  /** The latest ledger the network reported. */
  sequence: number;
  /** How long ago (ms) that call started. */
  ageMs: number;
  /** At most this many ledgers closed since (a safe upper bound, see above). */
  marginLedgers: number;
}

/** Ledgers per ms assumed at least: one per second. */
const MIN_RATE = 1 / 1000;

export class LatestLedgerCache {
  private readonly values = new Map<string, { sequence: number; observedAt: number; rate: number | null }>();
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly fetchLatest: (network: string) => Promise<number>,
    private readonly opts: { maxAgeMs: number; refreshAfterMs: number } = { maxAgeMs: 1000, refreshAfterMs: 500 },
    private readonly now: () => number = Date.now,
  ) {}

  async get(network: string): Promise<RecentLedger> {
    const known = this.values.get(network);
    const age = known ? this.now() - known.observedAt : Number.POSITIVE_INFINITY;
    if (known && known.rate !== null && age <= this.opts.maxAgeMs) {
      if (age > this.opts.refreshAfterMs) this.refresh(network).catch(() => undefined); // a later caller past maxAgeMs sees the error
      return this.answer(known.sequence, Math.max(0, age), known.rate);
    }
    await this.refresh(network);
    const fresh = this.values.get(network)!;
    return this.answer(fresh.sequence, Math.max(0, this.now() - fresh.observedAt), fresh.rate ?? MIN_RATE);
  }

  private answer(sequence: number, ageMs: number, rate: number): RecentLedger {
    return { sequence, ageMs, marginLedgers: Math.ceil(ageMs * Math.max(rate, MIN_RATE) * 2) + 2 };
  }

  private refresh(network: string): Promise<void> {
    let p = this.inflight.get(network);
    if (!p) {
      const startedAt = this.now();
      p = this.fetchLatest(network)
        .then((sequence) => {
          const known = this.values.get(network);
          if (known && sequence < known.sequence) return; // an older answer arriving late: keep the newer one
          let rate = known?.rate ?? null;
          const span = known ? startedAt - known.observedAt : 0;
          // the rate between the last two reads; the fastest of it and the one before (a network that sped up is seen
          // at once, one that slowed down after the next read)
          if (known && span >= 200) rate = Math.max((sequence - known.sequence) / span, MIN_RATE, span < 5000 ? (known.rate ?? 0) : 0);
          this.values.set(network, { sequence, observedAt: startedAt, rate });
        })
        .finally(() => this.inflight.delete(network));
      this.inflight.set(network, p);
    }
    return p;
  }
}
