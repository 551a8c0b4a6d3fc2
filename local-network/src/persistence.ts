import fs from 'node:fs';
import path from 'node:path';
import { Asset, Keypair } from '@stellar/stellar-sdk';
import { AssetRegistry } from './asset-registry';
import { NETWORK_PASSPHRASE } from './constants';
import { LedgerSnapshot } from './local-ledger';

/**
 * The data file: the whole ledger (entries, ledgers, transactions, events) plus the keys the network owns
 * (root/friendbot account, asset issuers). Bigints are written as {"$bigint": "..."}; writes are atomic
 * (temporary file + rename) so a crash never leaves a half-written file.
 */

export interface PersistedNetwork {
  version: 1;
  passphrase: string;
  rootSecret: string;
  issuers: Array<{ code: string; secret: string }>;
  ledger: LedgerSnapshot;
}

function replacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { $bigint: value.toString() } : value;
}

function reviver(_key: string, value: unknown): unknown {
  if (
    value &&
    typeof value === 'object' &&
    '$bigint' in value &&
    typeof (value as { $bigint: unknown }).$bigint === 'string'
  ) {
    return BigInt((value as { $bigint: string }).$bigint);
  }
  return value;
}

export function loadNetworkState(file: string): PersistedNetwork | undefined {
  if (!fs.existsSync(file)) return undefined;
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8'), reviver) as PersistedNetwork;
  if (parsed.version !== 1)
    throw new Error(`${file}: unsupported local network state version ${String(parsed.version)}`);
  return parsed;
}

export function saveNetworkState(file: string, state: PersistedNetwork): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(state, replacer), { mode: 0o600 });
  fs.renameSync(temp, file);
}

export interface MigratedAsset {
  code: string;
  fromIssuer: string;
  toIssuer: string;
  /** Trustlines and contract balances moved. */
  entries: number;
}

/**
 * A data file written before the network hosted Circle's testnet USDC holds a locally issued USDC (its issuer
 * secret is in `issuers`). For every persisted issuer whose code the registry now serves with another issuer, the
 * trustlines ("trustline:G:CODE:OLD") and SAC balances ("contractBalance:HOLDER:OLD_CONTRACT") move to the hosted
 * asset in place, so wallets keep their funds. Transactions and events already recorded keep the old asset: they
 * are history. The old issuer account stays an ordinary account; its secret is dropped from the file.
 */
export function migrateReissuedAssets(state: PersistedNetwork, registry: AssetRegistry): MigratedAsset[] {
  const migrated: MigratedAsset[] = [];
  for (const old of state.issuers) {
    const current = registry.find(old.code);
    const fromIssuer = Keypair.fromSecret(old.secret).publicKey();
    if (!current || current.asset.isNative() || current.issuer === fromIssuer) continue;
    const oldAsset = new Asset(current.code, fromIssuer);
    const oldAssetId = `${current.code}:${fromIssuer}`;
    const oldContract = oldAsset.contractId(NETWORK_PASSPHRASE);
    const rename = (key: string): string | undefined => {
      if (key.startsWith('trustline:') && key.endsWith(`:${oldAssetId}`))
        return `${key.slice(0, -oldAssetId.length)}${current.assetId}`;
      if (key.startsWith('contractBalance:') && key.endsWith(`:${oldContract}`))
        return `${key.slice(0, -oldContract.length)}${current.contractId}`;
      return undefined;
    };
    const byKey = new Map(state.ledger.entries);
    let moved = 0;
    for (const [key, record] of state.ledger.entries) {
      const target = rename(key);
      if (!target) continue;
      const existing = byKey.get(target);
      byKey.delete(key);
      if (existing && 'balance' in existing && 'balance' in record) {
        byKey.set(target, {
          ...existing,
          balance: (existing.balance as bigint) + (record.balance as bigint),
        } as typeof record);
      } else if (existing && 'amount' in existing && 'amount' in record) {
        byKey.set(target, {
          ...existing,
          amount: (existing.amount as bigint) + (record.amount as bigint),
        } as typeof record);
      } else {
        byKey.set(target, record);
      }
      moved += 1;
    }
    state.ledger.entries = [...byKey.entries()];
    migrated.push({ code: current.code, fromIssuer, toIssuer: current.issuer, entries: moved });
  }
  state.issuers = state.issuers.filter((i) => !migrated.some((m) => m.code.toUpperCase() === i.code.toUpperCase()));
  return migrated;
}
