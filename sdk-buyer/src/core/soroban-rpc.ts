/**
 * The one Soroban RPC reader of both SDKs (one source, copied into the seller SDK by scripts/generate.mjs): raw
 * JSON-RPC 2.0 over `fetch` with a deadline, and the reads built on it (the latest ledger, which ledger entries
 * exist). Every ledger read of the SDKs goes through it: the buyer's payment signing, budget reconciliation and
 * receipt checks, and the seller's wallet readiness. It trusts nothing the marketplace or a seller says: it asks
 * the network's own RPC. It signs and sends nothing.
 */

/** How long one RPC call may take unless the caller says otherwise. */
export const RPC_TIMEOUT_MS = 15_000;

export interface LedgerReader {
  /** One JSON-RPC call to the RPC of `network`; its `result`, or an Error naming the method (never the URL). */
  rpc<T = Record<string, unknown>>(network: string, method: string, params?: Record<string, unknown>): Promise<T>;
  /** getLatestLedger: the sequence of the newest closed ledger. */
  latestLedger(network: string): Promise<number>;
}

export interface LedgerReaderOptions {
  fetch?: typeof globalThis.fetch;
  /** Per call. Default RPC_TIMEOUT_MS (15 s). */
  timeoutMs?: number;
}

/**
 * A reader over the RPC URL of each network (`rpcUrlFor`). The second argument is the fetch to use (kept for
 * callers of the earlier signature) or the options.
 */
export function createLedgerReader(
  rpcUrlFor: (network: string) => Promise<string> | string,
  options: typeof globalThis.fetch | LedgerReaderOptions = {},
): LedgerReader {
  const o = typeof options === 'function' ? { fetch: options } : options;
  const fetchFn = o.fetch ?? globalThis.fetch;
  const timeoutMs = o.timeoutMs ?? RPC_TIMEOUT_MS;
  const reader: LedgerReader = {
    async rpc<T>(network: string, method: string, params: Record<string, unknown> = {}): Promise<T> {
      const res = await fetchFn(await rpcUrlFor(network), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const body = (await res.json().catch(() => null)) as { result?: T; error?: { message?: string } } | null;
      if (body?.error || (res.ok && body?.result === undefined))
        throw new Error(`Soroban RPC ${method} failed: ${body?.error?.message ?? 'no result'}`);
      if (!res.ok || !body) throw new Error(`Soroban RPC ${method} answered HTTP ${res.status}`);
      return body.result as T;
    },
    async latestLedger(network: string): Promise<number> {
      return (await reader.rpc<{ sequence: number }>(network, 'getLatestLedger')).sequence;
    },
  };
  return reader;
}

/** getLedgerEntries: which of the base64 ledger `keys` the ledger of `network` holds. */
export async function ledgerEntriesFound(ledger: LedgerReader, network: string, keys: string[]): Promise<Set<string>> {
  const result = await ledger.rpc<{ entries?: Array<{ key: string }> | null }>(network, 'getLedgerEntries', { keys });
  return new Set((result.entries ?? []).map((e) => e.key));
}

/** A reader of one RPC URL, whatever the network (for the calls that are given a URL rather than a network). */
export function ledgerReaderOf(rpcUrl: string, options?: typeof globalThis.fetch | LedgerReaderOptions): LedgerReader {
  return createLedgerReader(() => rpcUrl, options);
}

/** The latest ledger sequence that `rpcUrl` reports (getLatestLedger). */
export function latestLedgerOf(rpcUrl: string, fetchFn?: typeof globalThis.fetch): Promise<number> {
  return ledgerReaderOf(rpcUrl, fetchFn).latestLedger(rpcUrl);
}
