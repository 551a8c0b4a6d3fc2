import { formatAmount, stroops, toStroops, type Stroops } from '../amount';
import { parseAccepts, probeUrl, type Accept } from '../conformance/probe-402';
import type { LivenessFetch, LivenessState, LivenessTarget, Observation, TrustSettings } from './types';

/**
 * Liveness probes (issue #33): an unpaid request to a listed resource, never a payment. An http resource must answer
 * 402 with an `exact` requirement for its listed network and asset; an MCP tool must be listed by `tools/list` and
 * its unpaid `tools/call` must answer a payment requirement (an `accepts` list anywhere in the JSON-RPC answer). The
 * observed amount and payTo are compared with the listing by the caller (drift), not here: a 402 asking another
 * price or payee is live but drifted.
 */
export async function observe(
  fetch: LivenessFetch,
  target: LivenessTarget,
  contractId: string | null,
): Promise<Observation> {
  const started = process.hrtime.bigint();
  const elapsed = () => Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  try {
    const accepts = target.type === 'mcp' ? await mcpAccepts(fetch, target) : await httpAccepts(fetch, target);
    const latencyMs = elapsed();
    if (typeof accepts === 'string') return { live: false, reason: accepts, latencyMs, payTo: null, amount: null };
    const forUs = accepts.filter(
      (a) => a.scheme === 'exact' && a.network === target.network && assetMatches(a, target, contractId),
    );
    if (forUs.length === 0)
      return {
        live: false,
        reason: `NO_MATCHING_REQUIREMENT: no exact requirement for ${target.network} in ${target.assetCode}`,
        latencyMs,
        payTo: null,
        amount: null,
      };
    // The requirement that matches the listing best: the listed payTo first, then the listed amount.
    const best =
      forUs.find((a) => a.payTo === target.payTo && amountOf(a) === target.amount) ??
      forUs.find((a) => a.payTo === target.payTo) ??
      forUs[0];
    return {
      live: true,
      reason: null,
      latencyMs,
      payTo: typeof best.payTo === 'string' ? best.payTo : null,
      amount: amountOf(best),
    };
  } catch (err) {
    return {
      live: false,
      reason: `UNREACHABLE: ${(err as Error).message}`.slice(0, 300),
      latencyMs: elapsed(),
      payTo: null,
      amount: null,
    };
  }
}

function assetMatches(a: Accept, t: LivenessTarget, contractId: string | null): boolean {
  return (
    (contractId !== null && a.asset === contractId) ||
    (a.extra?.asset?.code === t.assetCode && a.extra?.asset?.issuer === t.assetIssuer)
  );
}

/**
 * The requirement's amount (atomic `amount` / `maxAmountRequired`, or the decimal `extra.amount`): the live 402's
 * face, converted once to Stroops; null when it names no amount in range.
 */
function amountOf(a: Accept): Stroops | null {
  try {
    for (const v of [a.amount, a.maxAmountRequired])
      if (typeof v === 'string' && /^\d{1,20}$/.test(v)) return stroops(v);
    if (typeof a.extra?.amount === 'string') return toStroops(a.extra.amount);
  } catch {
    return null;
  }
  return null;
}

async function httpAccepts(fetch: LivenessFetch, t: LivenessTarget): Promise<Accept[] | string> {
  const res = await fetch(probeUrl(t.url));
  if (res.status !== 402) return `NOT_402: answered ${res.status} to an unpaid request`;
  return parseAccepts(res) ?? 'NO_REQUIREMENTS: the 402 answer carries no x402 accepts list';
}

/** JSON-RPC answers as JSON or as server-sent events (`data:` lines). */
function rpcMessages(body: string): unknown[] {
  const texts =
    body.trimStart().startsWith('{') || body.trimStart().startsWith('[')
      ? [body]
      : body
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5));
  const out: unknown[] = [];
  for (const t of texts) {
    try {
      const v = JSON.parse(t) as unknown;
      out.push(...(Array.isArray(v) ? v : [v]));
    } catch {
      // not JSON: ignored
    }
  }
  return out;
}

/** The first `accepts` array anywhere in a JSON value (depth-bounded). */
function findAccepts(v: unknown, depth = 0): Accept[] | null {
  if (depth > 8 || v === null || typeof v !== 'object') return null;
  if (typeof v === 'string') return null;
  const o = v as Record<string, unknown>;
  if (Array.isArray(o.accepts)) return o.accepts as Accept[];
  for (const child of Object.values(o)) {
    if (typeof child === 'string' && child.includes('"accepts"')) {
      try {
        const inner = findAccepts(JSON.parse(child) as unknown, depth + 1);
        if (inner) return inner;
      } catch {
        // a plain string
      }
    }
    const found = findAccepts(child, depth + 1);
    if (found) return found;
  }
  return null;
}

async function mcpAccepts(fetch: LivenessFetch, t: LivenessTarget): Promise<Accept[] | string> {
  const post = (body: unknown) =>
    fetch(t.url, {
      method: 'POST',
      body: JSON.stringify(body),
      contentType: 'application/json',
      accept: 'application/json, text/event-stream',
    });
  const list = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  if (list.status !== 200) return `MCP_TOOLS_LIST_FAILED: tools/list answered ${list.status}`;
  const tools = rpcMessages(list.body).flatMap(
    (m) => (m as { result?: { tools?: Array<{ name?: unknown }> } }).result?.tools ?? [],
  );
  if (!tools.some((x) => x.name === t.toolName))
    return `MCP_TOOL_MISSING: tools/list does not list ${String(t.toolName)}`;
  const call = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: t.toolName, arguments: {} } });
  const accepts =
    call.status === 402
      ? parseAccepts(call)
      : (rpcMessages(call.body)
          .map((m) => findAccepts(m))
          .find((a) => a !== null) ?? null);
  return accepts ?? `MCP_NOT_PAID: the unpaid tools/call answered ${call.status} without a payment requirement`;
}

/** p-th percentile (nearest rank) of a list of latencies. */
export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** How many latencies a resource keeps for its p50/p99. */
export const LATENCY_SAMPLES = 50;

/**
 * The resource's next liveness state after one observation. A live answer makes it live at once (it comes back as
 * soon as it answers again); `failuresToDemote` failures in a row make it dead (demoted), dead for `dropAfterMs`
 * drops it from default results. A failing resource not yet dead is re-probed sooner (`retryMs`), a dead one at the
 * live interval, a dropped one rarely.
 */
export function nextState(prev: LivenessState | null, obs: Observation, now: Date, s: TrustSettings): LivenessState {
  const failures = obs.live ? 0 : (prev?.consecutiveFailures ?? 0) + 1;
  const wasLive = prev?.live ?? null;
  const live = obs.live ? true : failures >= s.failuresToDemote ? false : wasLive;
  const deadSince = live === false ? (prev?.deadSince ?? now) : null;
  const dropped = deadSince !== null && now.getTime() - deadSince.getTime() >= s.dropAfterMs;
  const latencies = obs.live
    ? [...(prev?.latenciesMs ?? []), obs.latencyMs].slice(-LATENCY_SAMPLES)
    : (prev?.latenciesMs ?? []);
  // A suspect (failed, not yet dead) is retried soon; a dead one at the live interval (it comes back within a cycle
  // of answering again), not at the retry gap: many dead listings must not eat the probes of the live ones.
  const wait = dropped ? s.droppedIntervalMs : live === false || obs.live ? s.intervalMs : s.retryMs;
  return {
    live,
    reason: obs.reason,
    checkedAt: now,
    nextCheckAt: new Date(now.getTime() + wait),
    deadSince,
    dropped,
    consecutiveFailures: failures,
    latenciesMs: latencies,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    observedPayTo: obs.live ? obs.payTo : (prev?.observedPayTo ?? null),
    observedAmount: obs.live ? obs.amount : (prev?.observedAmount ?? null),
  };
}

/** Drift of one live observation against the listing: a price or payout the listing does not say. */
export function driftOf(
  target: LivenessTarget,
  obs: Observation,
): Array<{ kind: 'price' | 'payout'; listed: string; observed: string }> {
  if (!obs.live) return [];
  const out: Array<{ kind: 'price' | 'payout'; listed: string; observed: string }> = [];
  if (obs.amount !== null && obs.amount !== target.amount)
    out.push({ kind: 'price', listed: formatAmount(target.amount), observed: formatAmount(obs.amount) });
  if (obs.payTo !== null && obs.payTo !== target.payTo)
    out.push({ kind: 'payout', listed: target.payTo, observed: obs.payTo });
  return out;
}
