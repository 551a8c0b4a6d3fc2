import { Asset, Keypair } from '@stellar/stellar-sdk';

/** A classic asset the network knows about, with its Stellar Asset Contract (SAC) address. */
export interface RegisteredAsset {
  /** "XLM" for the native asset, otherwise the asset code. */
  code: string;
  /** Empty for the native asset. */
  issuer: string;
  /** SEP-11 string: "native" or "CODE:ISSUER". Trustlines and the SAC's event topic use it. */
  assetId: string;
  contractId: string;
  asset: Asset;
}

export interface IssuedAssetInput {
  code: string;
  /** The issuer's account id (G...). */
  issuer: string;
  /** Only for issuers this network generated; a hosted real-world asset (Circle's testnet USDC) has none. */
  issuerKeypair?: Keypair;
}

/** SEP-11 string of a classic asset. */
export function assetIdOf(asset: Asset): string {
  return asset.isNative() ? 'native' : `${asset.getCode()}:${asset.getIssuer()}`;
}

/**
 * Every asset with a deployed SAC on this network: XLM plus the configured issued assets. The contract ids are
 * derived exactly as the SDK derives them, `Asset.contractId(passphrase)`.
 */
export class AssetRegistry {
  private readonly byContract = new Map<string, RegisteredAsset>();
  private readonly byCode = new Map<string, RegisteredAsset>();
  private readonly issuerKeys = new Map<string, Keypair>();

  constructor(passphrase: string, issued: IssuedAssetInput[]) {
    this.add(Asset.native(), 'XLM', passphrase);
    for (const { code, issuer, issuerKeypair } of issued) {
      if (this.byCode.has(code.toUpperCase()) || code.toUpperCase() === 'XLM')
        throw new Error(`asset ${code} is configured twice`);
      if (issuerKeypair && issuerKeypair.publicKey() !== issuer)
        throw new Error(`asset ${code}: the issuer secret does not match ${issuer}`);
      this.add(new Asset(code, issuer), code, passphrase);
      if (issuerKeypair) this.issuerKeys.set(code.toUpperCase(), issuerKeypair);
    }
  }

  private add(asset: Asset, code: string, passphrase: string): void {
    const entry: RegisteredAsset = {
      code,
      issuer: asset.isNative() ? '' : asset.getIssuer(),
      assetId: assetIdOf(asset),
      contractId: asset.contractId(passphrase),
      asset,
    };
    this.byContract.set(entry.contractId, entry);
    this.byCode.set(code.toUpperCase(), entry);
  }

  byContractId(contractId: string): RegisteredAsset | undefined {
    return this.byContract.get(contractId);
  }

  /** Looks up by code ("USDC", "XLM"/"native") or by SEP-11 id ("USDC:G..."). */
  find(codeOrId: string): RegisteredAsset | undefined {
    if (codeOrId === 'native') return this.byCode.get('XLM');
    const direct = this.byCode.get(codeOrId.toUpperCase());
    if (direct) return direct;
    return [...this.byCode.values()].find((a) => a.assetId === codeOrId);
  }

  require(codeOrId: string): RegisteredAsset {
    const found = this.find(codeOrId);
    if (!found) throw new Error(`unknown asset "${codeOrId}" on the local network`);
    return found;
  }

  issued(): RegisteredAsset[] {
    return [...this.byCode.values()].filter((a) => !a.asset.isNative());
  }

  /** The issuer's keypair when this network generated it; undefined for a hosted asset such as Circle's USDC. */
  issuerKeypair(code: string): Keypair | undefined {
    return this.issuerKeys.get(code.toUpperCase());
  }
}
