import { Asset, StrKey } from '@stellar/stellar-sdk';
import type { EvidenceLabel } from './payments/types';

/** The networks the service knows (the configuration's shape; config.ts reads them from the environment). */
export type NetworkId = 'stellar:testnet' | 'stellar:pubnet';
export const NETWORK_IDS: readonly NetworkId[] = ['stellar:testnet', 'stellar:pubnet'];

export interface AssetConfig {
  code: string;
  issuer: string;
}

export interface NetworkConfig {
  network: NetworkId;
  passphrase: string;
  /** Soroban RPC URL; null when the network is the in-process local network (filled in at start). */
  rpcUrl: string | null;
  assets: AssetConfig[];
  settlementEnabled: boolean;
}

export const TESTNET_PASSPHRASE = 'Test SDF Network ; September 2015';
export const PUBNET_PASSPHRASE = 'Public Global Stellar Network ; September 2015';
/** Circle's USDC issuers, the default asset of each network. */
export const DEFAULT_USDC_ISSUER: Record<NetworkId, string> = {
  'stellar:testnet': 'GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5',
  'stellar:pubnet': 'GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN',
};

/**
 * An asset as the domain names it: its SEP-41 Stellar Asset Contract id (C...), the address its transfers are calls
 * on. Made only by `assetContractId` (the registry derives one per configured asset); a face maps what its wire says
 * (x402: the contract id; /v1: code and issuer) to the registered asset at its edge. The brand only stops an
 * unchecked string from being passed where an asset is expected.
 */
export type AssetContractId = string & { readonly __brand: 'AssetContractId' };

/** The asset's contract id on the network of `passphrase`, derived with the Stellar SDK exactly as the ledger does. */
export function assetContractId(code: string, issuer: string, passphrase: string): AssetContractId {
  return new Asset(code, issuer).contractId(passphrase) as AssetContractId;
}

export interface RegisteredAsset {
  code: string;
  issuer: string;
  contractId: AssetContractId;
}

export type { EvidenceLabel };

export interface RegisteredNetwork {
  network: NetworkId;
  passphrase: string;
  rpcUrl: string | null;
  /** True when the RPC is this service's own local network simulator: its evidence is local simulation. */
  local: boolean;
  settlementEnabled: boolean;
  assets: RegisteredAsset[];
}

/** The configured networks and assets: the one place domain code asks "is this network / asset supported?". */
export class NetworkRegistry {
  private readonly byId = new Map<string, RegisteredNetwork>();

  constructor(networks: Array<NetworkConfig & { local?: boolean }>) {
    for (const n of networks) {
      this.byId.set(n.network, {
        network: n.network,
        passphrase: n.passphrase,
        rpcUrl: n.rpcUrl,
        local: n.local ?? false,
        settlementEnabled: n.settlementEnabled,
        assets: n.assets.map((a) => ({ ...a, contractId: assetContractId(a.code, a.issuer, n.passphrase) })),
      });
    }
  }

  list(): RegisteredNetwork[] {
    return [...this.byId.values()];
  }

  get(network: string): RegisteredNetwork | undefined {
    return this.byId.get(network);
  }

  asset(network: string, code: string, issuer: string): RegisteredAsset | undefined {
    return this.get(network)?.assets.find((a) => a.code === code && a.issuer === issuer);
  }

  /** The network's RPC turned out to be this service's local simulator (simulator-detection.ts). */
  markLocal(network: string): void {
    const n = this.byId.get(network);
    if (n) n.local = true;
  }

  /**
   * What this network's evidence is, as shown for the network itself (/v1/networks, /v1/stats, the dashboard): a
   * network whose settlement is disabled only verifies, so it is never labelled as settling (issue #22).
   */
  networkEvidence(network: string): EvidenceLabel {
    const n = this.get(network);
    if (!n || n.local || n.settlementEnabled) return this.settlementEvidence(network);
    return n.network === 'stellar:pubnet' ? 'mainnet_verification' : 'testnet_verification';
  }

  /** What a successful settlement on this network proves. */
  settlementEvidence(network: string): EvidenceLabel {
    const n = this.get(network);
    if (!n || n.local) return 'local_simulation';
    return n.network === 'stellar:pubnet' ? 'mainnet_settlement' : 'testnet_settlement';
  }
}

export function isAccountAddress(value: string): boolean {
  return StrKey.isValidEd25519PublicKey(value);
}

export function isPayToAddress(value: string): boolean {
  return StrKey.isValidEd25519PublicKey(value) || StrKey.isValidContract(value);
}

/**
 * Only the scheme and host of an RPC URL: providers put API keys in the path or query (and sometimes in user
 * info), so a URL is never shown whole.
 */
export function rpcOrigin(rpcUrl: string | null): string | null {
  if (!rpcUrl) return null;
  try {
    const u = new URL(rpcUrl);
    return `${u.protocol}//${u.host}`;
  } catch {
    return null;
  }
}
