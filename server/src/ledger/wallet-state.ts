import { Asset, Keypair, xdr } from '@stellar/stellar-sdk';
import type { NetworkRegistry, RegisteredAsset } from '../domain/network-registry';
import { networkKnownDown } from './rpc-health';
import type { WalletState } from '../domain/catalog/payto-readiness';

/**
 * The catalog's wallet-state reader (domain/catalog/payto-readiness.ts): one getLedgerEntries call for the account
 * and its trustline, with a short deadline. Any failure (RPC down, slow, no RPC configured) answers null: readiness
 * is a warning, never a reason to fail or hold a catalog request.
 */
export function createWalletStateReader(networks: NetworkRegistry, timeoutMs = 2_000) {
  return async (network: string, address: string, asset: RegisteredAsset): Promise<WalletState | null> => {
    const rpcUrl = networks.get(network)?.rpcUrl;
    if (!rpcUrl || networkKnownDown(networks, network)) return null;
    try {
      const accountId = Keypair.fromPublicKey(address).xdrAccountId();
      const keys = [
        xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId })).toXDR('base64'),
        xdr.LedgerKey.trustline(new xdr.LedgerKeyTrustLine({ accountId, asset: new Asset(asset.code, asset.issuer).toTrustLineXDRObject() })).toXDR('base64'),
      ];
      const res = await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getLedgerEntries', params: { keys } }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) return null;
      const body = (await res.json()) as { result?: { entries?: Array<{ key: string }> | null } };
      if (!body.result) return null;
      const found = new Set((body.result.entries ?? []).map((e) => e.key));
      return { account: found.has(keys[0]), trustline: found.has(keys[1]) };
    } catch {
      return null;
    }
  };
}
