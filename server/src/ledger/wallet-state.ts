import { Asset, Keypair, xdr } from '@stellar/stellar-sdk';
import type { NetworkRegistry, RegisteredAsset } from '../domain/network-registry';
import { networkKnownDown } from './rpc-health';
import { accountKey, sorobanRpc } from './soroban-rpc';
import type { WalletState } from '../domain/catalog/payto-readiness';

/**
 * The catalog's wallet-state reader (domain/catalog/payto-readiness.ts): the account and its trustline read in one
 * getLedgerEntries (batched with the other lookups of the same tick, see soroban-rpc.ts), with a short deadline.
 * Any failure (RPC down, slow, no RPC configured) answers null: readiness is a warning, never a reason to fail or
 * hold a catalog request.
 */
export function createWalletStateReader(networks: NetworkRegistry, timeoutMs = 2_000) {
  return async (network: string, address: string, asset: RegisteredAsset): Promise<WalletState | null> => {
    const rpcUrl = networks.get(network)?.rpcUrl;
    if (!rpcUrl || networkKnownDown(networks, network)) return null;
    try {
      const accountId = Keypair.fromPublicKey(address).xdrAccountId();
      const trustline = xdr.LedgerKey.trustline(
        new xdr.LedgerKeyTrustLine({ accountId, asset: new Asset(asset.code, asset.issuer).toTrustLineXDRObject() }),
      ).toXDR('base64');
      const rpc = sorobanRpc(rpcUrl, timeoutMs);
      const [account, line] = await Promise.all([rpc.entry(accountKey(address)), rpc.entry(trustline)]);
      return { account: account !== null, trustline: line !== null };
    } catch {
      return null;
    }
  };
}
