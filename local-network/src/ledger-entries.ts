import { Address, Asset, Keypair, StrKey, nativeToScVal, xdr } from '@stellar/stellar-sdk';
import { ASSET_DECIMALS, PERSISTENT_ENTRY_TTL } from './constants';
import { AssetRegistry, RegisteredAsset, assetIdOf } from './asset-registry';
import { accountContractInstance } from './account-contract';
import {
  AccountRecord,
  LedgerRecord,
  LedgerView,
  OfferRecord,
  TrustlineRecord,
  entryKey,
  getAccountContract,
  thresholdsOf,
} from './ledger-state';

/**
 * Translation between the simulator's records and real Stellar ledger XDR: LedgerKeys as clients build them and
 * LedgerEntries as `getLedgerEntries` returns them (accounts, trustlines, SAC instances, SAC balances of contract
 * holders, consumed nonces).
 */

/** The ledger the SAC instances were "deployed" in. */
const GENESIS_LEDGER = 1;
const TRUSTLINE_AUTHORIZED_FLAG = 1;

export const ledgerKeys = {
  account(accountId: string): xdr.LedgerKey {
    return xdr.LedgerKey.account(
      new xdr.LedgerKeyAccount({ accountId: Keypair.fromPublicKey(accountId).xdrAccountId() }),
    );
  },
  trustline(accountId: string, asset: Asset): xdr.LedgerKey {
    return xdr.LedgerKey.trustline(
      new xdr.LedgerKeyTrustLine({
        accountId: Keypair.fromPublicKey(accountId).xdrAccountId(),
        asset: asset.toTrustLineXDRObject(),
      }),
    );
  },
  contractData(contract: string, key: xdr.ScVal, durability: xdr.ContractDataDurability): xdr.LedgerKey {
    return xdr.LedgerKey.contractData(
      new xdr.LedgerKeyContractData({ contract: new Address(contract).toScAddress(), key, durability }),
    );
  },
  contractInstance(contractId: string): xdr.LedgerKey {
    return ledgerKeys.contractData(
      contractId,
      xdr.ScVal.scvLedgerKeyContractInstance(),
      xdr.ContractDataDurability.persistent(),
    );
  },
  sacInstance(contractId: string): xdr.LedgerKey {
    return ledgerKeys.contractData(
      contractId,
      xdr.ScVal.scvLedgerKeyContractInstance(),
      xdr.ContractDataDurability.persistent(),
    );
  },
  sacBalance(contractId: string, holder: string): xdr.LedgerKey {
    return ledgerKeys.contractData(contractId, sacBalanceKey(holder), xdr.ContractDataDurability.persistent());
  },
  nonce(address: string, nonce: bigint): xdr.LedgerKey {
    const key = xdr.ScVal.scvLedgerKeyNonce(new xdr.ScNonceKey({ nonce: xdr.Int64.fromString(nonce.toString()) }));
    return ledgerKeys.contractData(address, key, xdr.ContractDataDurability.temporary());
  },
};

/** Where `holder` keeps its balance of `asset`, as a ledger key (none for the issuer of an issued asset). */
export function balanceLedgerKey(holder: string, asset: RegisteredAsset): xdr.LedgerKey | undefined {
  if (StrKey.isValidContract(holder)) return ledgerKeys.sacBalance(asset.contractId, holder);
  if (asset.asset.isNative()) return ledgerKeys.account(holder);
  if (holder === asset.issuer) return undefined;
  return ledgerKeys.trustline(holder, asset.asset);
}

function sacBalanceKey(holder: string): xdr.ScVal {
  return xdr.ScVal.scvVec([xdr.ScVal.scvSymbol('Balance'), new Address(holder).toScVal()]);
}

const i64 = (value: bigint): xdr.Int64 => xdr.Int64.fromString(value.toString());

function liabilitiesXdr(record: AccountRecord | TrustlineRecord): xdr.Liabilities | undefined {
  if (!record.liabilities || (record.liabilities.buying === 0n && record.liabilities.selling === 0n)) return undefined;
  return new xdr.Liabilities({ buying: i64(record.liabilities.buying), selling: i64(record.liabilities.selling) });
}

function accountExt(record: AccountRecord): xdr.AccountEntryExt {
  const liabilities = liabilitiesXdr(record);
  if (!liabilities) return new xdr.AccountEntryExt(0);
  return new xdr.AccountEntryExt(
    1,
    new xdr.AccountEntryExtensionV1({ liabilities, ext: new xdr.AccountEntryExtensionV1Ext(0) }),
  );
}

function accountEntry(accountId: string, record: AccountRecord): xdr.LedgerEntryData {
  return xdr.LedgerEntryData.account(
    new xdr.AccountEntry({
      accountId: Keypair.fromPublicKey(accountId).xdrAccountId(),
      balance: i64(record.balance),
      seqNum: xdr.Int64.fromString(record.seqNum.toString()),
      numSubEntries: record.numSubEntries,
      inflationDest: null,
      flags: record.flags ?? 0,
      homeDomain: '',
      thresholds: Buffer.from(thresholdsOf(record)),
      signers: (record.signers ?? []).map(
        (s) =>
          new xdr.Signer({
            key: xdr.SignerKey.signerKeyTypeEd25519(StrKey.decodeEd25519PublicKey(s.key)),
            weight: s.weight,
          }),
      ),
      ext: accountExt(record),
    }),
  );
}

function trustlineExt(record: TrustlineRecord): xdr.TrustLineEntryExt {
  const liabilities = liabilitiesXdr(record);
  if (!liabilities) return new xdr.TrustLineEntryExt(0);
  return new xdr.TrustLineEntryExt(1, new xdr.TrustLineEntryV1({ liabilities, ext: new xdr.TrustLineEntryV1Ext(0) }));
}

function trustlineEntry(accountId: string, asset: Asset, record: TrustlineRecord): xdr.LedgerEntryData {
  return xdr.LedgerEntryData.trustline(
    new xdr.TrustLineEntry({
      accountId: Keypair.fromPublicKey(accountId).xdrAccountId(),
      asset: asset.toTrustLineXDRObject(),
      balance: i64(record.balance),
      limit: i64(record.limit),
      flags: record.flags ?? TRUSTLINE_AUTHORIZED_FLAG,
      ext: trustlineExt(record),
    }),
  );
}

function contractDataEntry(
  contract: string,
  key: xdr.ScVal,
  durability: xdr.ContractDataDurability,
  val: xdr.ScVal,
): xdr.LedgerEntryData {
  return xdr.LedgerEntryData.contractData(
    new xdr.ContractDataEntry({
      ext: new xdr.ExtensionPoint(0),
      contract: new Address(contract).toScAddress(),
      key,
      durability,
      val,
    }),
  );
}

function symbolMap(entries: Array<[string, xdr.ScVal]>): xdr.ScVal {
  const sorted = [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return xdr.ScVal.scvMap(sorted.map(([key, val]) => new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol(key), val })));
}

/** The SAC's contract instance: executable "stellar asset", with its METADATA, Admin and AssetInfo storage. */
function sacInstanceValue(asset: RegisteredAsset): xdr.ScVal {
  const native = asset.asset.isNative();
  const metadata = symbolMap([
    ['decimal', xdr.ScVal.scvU32(ASSET_DECIMALS)],
    ['name', xdr.ScVal.scvString(native ? 'native' : asset.assetId)],
    ['symbol', xdr.ScVal.scvString(native ? 'native' : asset.code)],
  ]);
  const assetInfo = native
    ? xdr.ScVal.scvVec([xdr.ScVal.scvSymbol('Native')])
    : xdr.ScVal.scvVec([
        xdr.ScVal.scvSymbol(asset.code.length <= 4 ? 'AlphaNum4' : 'AlphaNum12'),
        symbolMap([
          ['asset_code', xdr.ScVal.scvString(asset.code)],
          ['issuer', xdr.ScVal.scvBytes(StrKey.decodeEd25519PublicKey(asset.issuer))],
        ]),
      ]);
  const storage = [new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('METADATA'), val: metadata })];
  if (!native) {
    storage.push(
      new xdr.ScMapEntry({
        key: xdr.ScVal.scvVec([xdr.ScVal.scvSymbol('Admin')]),
        val: new Address(asset.issuer).toScVal(),
      }),
    );
  }
  storage.push(new xdr.ScMapEntry({ key: xdr.ScVal.scvVec([xdr.ScVal.scvSymbol('AssetInfo')]), val: assetInfo }));
  return xdr.ScVal.scvContractInstance(
    new xdr.ScContractInstance({ executable: xdr.ContractExecutable.contractExecutableStellarAsset(), storage }),
  );
}

function sacBalanceValue(amount: bigint): xdr.ScVal {
  return symbolMap([
    ['amount', nativeToScVal(amount, { type: 'i128' })],
    ['authorized', xdr.ScVal.scvBool(true)],
    ['clawback', xdr.ScVal.scvBool(false)],
  ]);
}

const assetOfId = (assetId: string): Asset =>
  assetId === 'native' ? Asset.native() : new Asset(...(assetId.split(':') as [string, string]));

export function offerEntry(offer: OfferRecord): xdr.OfferEntry {
  return new xdr.OfferEntry({
    sellerId: Keypair.fromPublicKey(offer.seller).xdrAccountId(),
    offerId: i64(offer.offerId),
    selling: assetOfId(offer.selling).toXDRObject(),
    buying: assetOfId(offer.buying).toXDRObject(),
    amount: i64(offer.amount),
    price: new xdr.Price({ n: offer.priceN, d: offer.priceD }),
    flags: 0,
    ext: new xdr.OfferEntryExt(0),
  });
}

/** A ledger entry as getLedgerEntries returns it, still as XDR objects. */
export interface FoundEntry {
  data: xdr.LedgerEntryData;
  lastModifiedLedgerSeq: number;
  liveUntilLedgerSeq?: number;
}

function assetFromTrustLineAsset(tla: xdr.TrustLineAsset): Asset | undefined {
  switch (tla.switch().name) {
    case 'assetTypeCreditAlphanum4':
      return Asset.fromOperation(xdr.Asset.assetTypeCreditAlphanum4(tla.alphaNum4()));
    case 'assetTypeCreditAlphanum12':
      return Asset.fromOperation(xdr.Asset.assetTypeCreditAlphanum12(tla.alphaNum12()));
    default:
      return undefined;
  }
}

/** The simulator's record key for an XDR ledger key, or undefined when the simulator holds no such entry kind. */
export function recordKeyOf(key: xdr.LedgerKey, registry: AssetRegistry): string | undefined {
  switch (key.switch().name) {
    case 'account':
      return entryKey.account(StrKey.encodeEd25519PublicKey(key.account().accountId().ed25519()));
    case 'trustline': {
      const asset = assetFromTrustLineAsset(key.trustLine().asset());
      if (!asset) return undefined;
      return entryKey.trustline(StrKey.encodeEd25519PublicKey(key.trustLine().accountId().ed25519()), assetIdOf(asset));
    }
    case 'offer':
      return entryKey.offer(
        StrKey.encodeEd25519PublicKey(key.offer().sellerId().ed25519()),
        BigInt(key.offer().offerId().toString()),
      );
    case 'contractData': {
      const cd = key.contractData();
      const contract = Address.fromScAddress(cd.contract()).toString();
      const k = cd.key();
      if (k.switch().name === 'scvLedgerKeyNonce' && cd.durability().name === 'temporary') {
        return entryKey.nonce(contract, BigInt(k.nonceKey().nonce().toString()));
      }
      const vec = k.switch().name === 'scvVec' ? (k.vec() ?? []) : [];
      if (
        registry.byContractId(contract) &&
        vec.length === 2 &&
        vec[0].switch().name === 'scvSymbol' &&
        vec[0].sym().toString() === 'Balance'
      ) {
        const holder = Address.fromScVal(vec[1]).toString();
        return StrKey.isValidContract(holder) ? entryKey.contractBalance(holder, contract) : undefined;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** Reads one ledger entry the way the real RPC does: undefined when it does not exist. */
export function readLedgerEntry(
  view: LedgerView,
  registry: AssetRegistry,
  key: xdr.LedgerKey,
  latestLedger: number,
): FoundEntry | undefined {
  if (key.switch().name === 'contractData') {
    const cd = key.contractData();
    const contract = Address.fromScAddress(cd.contract()).toString();
    const sac = registry.byContractId(contract);
    if (sac && cd.key().switch().name === 'scvLedgerKeyContractInstance' && cd.durability().name === 'persistent') {
      return {
        data: contractDataEntry(contract, cd.key(), cd.durability(), sacInstanceValue(sac)),
        lastModifiedLedgerSeq: GENESIS_LEDGER,
        liveUntilLedgerSeq: latestLedger + PERSISTENT_ENTRY_TTL,
      };
    }
    const accountContract = getAccountContract(view, contract);
    if (
      accountContract &&
      cd.key().switch().name === 'scvLedgerKeyContractInstance' &&
      cd.durability().name === 'persistent'
    ) {
      return {
        data: contractDataEntry(
          contract,
          cd.key(),
          cd.durability(),
          accountContractInstance(accountContract.publicKey),
        ),
        lastModifiedLedgerSeq: accountContract.lastModified,
        liveUntilLedgerSeq: latestLedger + PERSISTENT_ENTRY_TTL,
      };
    }
  }
  const recordKey = recordKeyOf(key, registry);
  if (!recordKey) return undefined;
  const record = view.get(recordKey);
  return record ? entryFromRecord(key, record, latestLedger) : undefined;
}

function entryFromRecord(key: xdr.LedgerKey, record: LedgerRecord, latestLedger: number): FoundEntry | undefined {
  switch (record.kind) {
    case 'account':
      return {
        data: accountEntry(StrKey.encodeEd25519PublicKey(key.account().accountId().ed25519()), record),
        lastModifiedLedgerSeq: record.lastModified,
      };
    case 'trustline': {
      const tl = key.trustLine();
      const asset = assetFromTrustLineAsset(tl.asset());
      if (!asset) return undefined;
      return {
        data: trustlineEntry(StrKey.encodeEd25519PublicKey(tl.accountId().ed25519()), asset, record),
        lastModifiedLedgerSeq: record.lastModified,
      };
    }
    case 'contractBalance': {
      const cd = key.contractData();
      return {
        data: contractDataEntry(
          Address.fromScAddress(cd.contract()).toString(),
          cd.key(),
          cd.durability(),
          sacBalanceValue(record.amount),
        ),
        lastModifiedLedgerSeq: record.lastModified,
        liveUntilLedgerSeq: latestLedger + PERSISTENT_ENTRY_TTL,
      };
    }
    case 'offer':
      return { data: xdr.LedgerEntryData.offer(offerEntry(record)), lastModifiedLedgerSeq: record.lastModified };
    case 'nonce': {
      const cd = key.contractData();
      return {
        data: contractDataEntry(
          Address.fromScAddress(cd.contract()).toString(),
          cd.key(),
          cd.durability(),
          xdr.ScVal.scvVoid(),
        ),
        lastModifiedLedgerSeq: record.lastModified,
        liveUntilLedgerSeq: record.expirationLedger,
      };
    }
  }
}
