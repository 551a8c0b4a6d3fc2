/**
 * getFeeStats as Soroban RPC computes it: the distribution of inclusion fees bid per operation by the
 * transactions of recent ledgers, Soroban and classic apart. Local deviation, so clients always see a fee that
 * lands: every figure is at least the network's current minimum inclusion fee (the base fee, or the surge
 * minimum set with setMinimumInclusionFee), and with no recent transactions every figure is that minimum.
 */

export interface FeeSample {
  ledger: number;
  soroban: boolean;
  /** Inclusion fee bid per operation, stroops. */
  fee: bigint;
  /** Other users' traffic added by the pubnet fee profile (removed when the profile is switched off). */
  background?: boolean;
}

export interface FeeDistribution {
  max: string;
  min: string;
  mode: string;
  p10: string;
  p20: string;
  p30: string;
  p40: string;
  p50: string;
  p60: string;
  p70: string;
  p80: string;
  p90: string;
  p95: string;
  p99: string;
  transactionCount: string;
  ledgerCount: number;
}

const PERCENTILES = [10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99] as const;

function modeOf(sorted: bigint[]): bigint {
  let best = sorted[0];
  let bestCount = 0;
  let run = 0;
  for (let i = 0; i < sorted.length; i += 1) {
    run = i > 0 && sorted[i] === sorted[i - 1] ? run + 1 : 1;
    if (run > bestCount) {
      bestCount = run;
      best = sorted[i];
    }
  }
  return best;
}

/** Nearest-rank percentiles of the samples, floored at `minimum`. */
export function feeDistribution(samples: bigint[], minimum: bigint, ledgerCount: number): FeeDistribution {
  const sorted = samples.map((f) => (f < minimum ? minimum : f)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const at = (p: number): string =>
    (sorted.length === 0 ? minimum : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]).toString();
  const percentiles = Object.fromEntries(PERCENTILES.map((p) => [`p${p}`, at(p)])) as Record<
    `p${(typeof PERCENTILES)[number]}`,
    string
  >;
  return {
    max: (sorted[sorted.length - 1] ?? minimum).toString(),
    min: (sorted[0] ?? minimum).toString(),
    mode: (sorted.length ? modeOf(sorted) : minimum).toString(),
    ...percentiles,
    transactionCount: String(sorted.length),
    ledgerCount,
  };
}

/** `sorobanMinimum`: the Soroban lane's own minimum when it is higher (the pubnet fee profile). */
export function feeStats(
  samples: FeeSample[],
  minimum: bigint,
  latestLedger: number,
  windowLedgers: number,
  sorobanMinimum = minimum,
) {
  const ledgerCount = Math.min(windowLedgers, latestLedger);
  return {
    sorobanInclusionFee: feeDistribution(
      samples.filter((s) => s.soroban).map((s) => s.fee),
      sorobanMinimum > minimum ? sorobanMinimum : minimum,
      ledgerCount,
    ),
    inclusionFee: feeDistribution(
      samples.filter((s) => !s.soroban).map((s) => s.fee),
      minimum,
      ledgerCount,
    ),
    latestLedger,
  };
}
