/**
 * Where an open loop's latency went, request by request: the load generator's own lateness (from the planned send to
 * node:http getting the request), the way to the service (to its first middleware, read from the service's
 * `Server-Timing` header: SERVER_TIMING=true), each middleware stage inside the service, and the rest (the response's
 * write, the way back, the generator's own event loop). The parts of each request sum to its latency. Both processes
 * read the same machine clock (performance.timeOrigin + now()).
 */
import { performance } from 'node:perf_hooks';
import type { OpenLoopTrace } from './load';

interface Parts {
  latency: number;
  at: number;
  parts: Map<string, number>;
}

/** `recv;desc="<epoch ms>", <stage>;dur=<ms>, …` → the receive time and the stages in order. */
export function parseServerTiming(header: string): { recv: number; stages: Array<[string, number]> } | null {
  let recv = NaN;
  const stages: Array<[string, number]> = [];
  for (const item of header.split(',')) {
    const [name, ...params] = item.trim().split(';');
    for (const p of params) {
      const [k, v] = p.split('=');
      if (name === 'recv' && k === 'desc') recv = Number(v.replace(/"/g, ''));
      else if (k === 'dur') stages.push([name, Number(v)]);
    }
  }
  return Number.isFinite(recv) ? { recv, stages } : null;
}

function split(t: OpenLoopTrace, origin: number, start: number): Parts | null {
  const a = t.answer;
  const timing = a.serverTiming ? parseServerTiming(a.serverTiming) : null;
  if (!timing || a.sentAt === undefined) return null;
  const parts = new Map<string, number>();
  const sent = origin + a.sentAt;
  parts.set('generator late', a.sentAt - t.scheduled);
  parts.set('to the service', timing.recv - sent);
  let inside = 0;
  for (const [name, ms] of timing.stages) {
    parts.set(name, (parts.get(name) ?? 0) + ms);
    inside += ms;
  }
  parts.set('after the headers', t.latency - (timing.recv + inside - (origin + t.scheduled)));
  return { latency: t.latency, at: (t.scheduled - start) / 1000, parts };
}

function meanLine(rows: Parts[]): string {
  const sums = new Map<string, number>();
  for (const r of rows) for (const [k, v] of r.parts) sums.set(k, (sums.get(k) ?? 0) + v);
  return [...sums]
    .map(([k, v]) => [k, v / rows.length] as const)
    .filter(([, v]) => Math.abs(v) >= 0.05)
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(', ');
}

/** The slowest latency of each second of an open loop (the shape of a tail: one stall or many). */
export function worstBySecond(traces: OpenLoopTrace[]): string {
  if (traces.length === 0) return '';
  const start = Math.min(...traces.map((t) => t.scheduled));
  const worst: number[] = [];
  for (const t of traces) {
    const s = Math.floor((t.scheduled - start) / 1000);
    worst[s] = Math.max(worst[s] ?? 0, t.latency);
  }
  return `  slowest per second of the run: ${[...worst].map((ms) => (ms ?? 0).toFixed(0)).join(', ')} ms`;
}

/** Lines naming where the slowest 1 % and the middle 10 % of an open loop's requests spent their time (mean ms). */
export function tailBreakdown(traces: OpenLoopTrace[]): string[] {
  if (traces.length === 0) return [];
  const origin = performance.timeOrigin;
  const start = Math.min(...traces.map((t) => t.scheduled));
  const rows = traces
    .map((t) => split(t, origin, start))
    .filter((r): r is Parts => r !== null)
    .sort((a, b) => a.latency - b.latency);
  if (rows.length === 0) return ['  (no Server-Timing header: BENCH_SERVER_TIMING=0, or a service tree without it)'];
  const slow = rows.slice(Math.floor(rows.length * 0.99));
  const middle = rows.slice(Math.floor(rows.length * 0.45), Math.ceil(rows.length * 0.55));
  const when = slow
    .map((r) => r.at)
    .sort((a, b) => a - b)
    .map((s) => s.toFixed(2))
    .join(', ');
  return [
    `  where the time went (mean ms; generator clock + the service's Server-Timing): slowest 1 % (${slow.length}, ` +
      `≥ ${slow[0].latency.toFixed(1)} ms): ${meanLine(slow)}`,
    `  middle 10 % (${middle.length}, ${middle[0].latency.toFixed(1)}–` +
      `${middle[middle.length - 1].latency.toFixed(1)} ms): ${meanLine(middle)}`,
    `  the slowest 1 % were due at ${when} s into the run`,
  ];
}
