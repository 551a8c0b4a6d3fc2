/**
 * The local network's own HTTP endpoints beside its RPC (local-network/src/http-server.ts): friendbot
 * (`GET /friendbot?addr=`: creates an account with XLM) and the faucet (`POST /faucet`: adds the trustline when
 * missing and pays an issued asset from the network's treasury). Both live on the RPC URL without its `/rpc` path.
 * They exist only on the local network: a testnet or mainnet RPC has neither.
 */
export interface LocalNetworkClient {
  /** Funds `address` with XLM (creates the account). Throws when friendbot refuses and the account still does not
   * exist. */
  fund(address: string): Promise<void>;
  /** Pays `amount` (decimal) of `asset` (`CODE:ISSUER`) to `address`, adding its trustline first when missing. */
  faucet(address: string, asset: string, amount: string): Promise<void>;
}

export function localNetworkBaseUrl(rpcUrl: string): string {
  return rpcUrl.replace(/\/rpc\/?$/, '').replace(/\/$/, '');
}

export function localNetworkClient(rpcUrl: string, opts: { timeoutMs?: number } = {}): LocalNetworkClient {
  const base = localNetworkBaseUrl(rpcUrl);
  const timeout = () => AbortSignal.timeout(opts.timeoutMs ?? 30_000);
  const ok = async (res: Response, what: string) => {
    await res.arrayBuffer().catch(() => undefined);
    if (!res.ok) throw new Error(`${what} answered ${res.status}`);
  };
  return {
    fund: async (address) =>
      ok(await fetch(`${base}/friendbot?addr=${encodeURIComponent(address)}`, { signal: timeout() }), 'friendbot'),
    faucet: async (address, asset, amount) =>
      ok(
        await fetch(`${base}/faucet`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ address, asset, amount }),
          signal: timeout(),
        }),
        'faucet',
      ),
  };
}
