/**
 * Quantiles from Prometheus-style cumulative histogram buckets, computed the way `histogram_quantile` does (linear
 * interpolation inside the bucket), so the dashboard and /v1/stats agree with a Prometheus query over the same
 * histogram.
 */
export interface HistogramSnapshot {
  /** Upper bounds, ascending, the last one +Inf. */
  le: number[];
  /** Cumulative counts per bound. */
  cumulative: number[];
  count: number;
  sum: number;
}

export const EMPTY_HISTOGRAM: HistogramSnapshot = { le: [], cumulative: [], count: 0, sum: 0 };

/** b - a: the observations made between two snapshots of the same histogram. */
export function histogramDelta(a: HistogramSnapshot | null, b: HistogramSnapshot): HistogramSnapshot {
  if (!a || a.le.length !== b.le.length) return b;
  return {
    le: b.le,
    cumulative: b.cumulative.map((c, i) => Math.max(0, c - (a.cumulative[i] ?? 0))),
    count: Math.max(0, b.count - a.count),
    sum: Math.max(0, b.sum - a.sum),
  };
}

/** The q-quantile (0..1) in the histogram's unit; null when it holds no observation. */
export function histogramQuantile(q: number, h: HistogramSnapshot): number | null {
  if (h.count <= 0 || h.le.length === 0) return null;
  const rank = q * h.count;
  for (let i = 0; i < h.le.length; i++) {
    if (h.cumulative[i] >= rank) {
      const upper = h.le[i];
      const lower = i === 0 ? 0 : h.le[i - 1];
      if (!Number.isFinite(upper)) return lower; // in the +Inf bucket: the highest finite bound, like Prometheus
      const below = i === 0 ? 0 : h.cumulative[i - 1];
      const inBucket = h.cumulative[i] - below;
      return inBucket <= 0 ? upper : lower + (upper - lower) * ((rank - below) / inBucket);
    }
  }
  return h.le.length > 1 ? h.le[h.le.length - 2] : null;
}

/** Sums the buckets of every label set of a histogram (prom-client `get()` values) into one snapshot. */
export function sumHistogram(
  values: Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>,
  name: string,
  filter: (labels: Record<string, string | number>) => boolean = () => true,
): HistogramSnapshot {
  const byLe = new Map<number, number>();
  let count = 0;
  let sum = 0;
  for (const v of values) {
    if (!filter(v.labels)) continue;
    if (v.metricName === `${name}_bucket`) {
      const le = v.labels.le === '+Inf' ? Infinity : Number(v.labels.le);
      byLe.set(le, (byLe.get(le) ?? 0) + v.value);
    } else if (v.metricName === `${name}_count`) count += v.value;
    else if (v.metricName === `${name}_sum`) sum += v.value;
  }
  const le = [...byLe.keys()].sort((a, b) => a - b);
  return { le, cumulative: le.map((l) => byLe.get(l)!), count, sum };
}
