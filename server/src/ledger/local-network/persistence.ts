import fs from 'node:fs';
import path from 'node:path';
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
  if (value && typeof value === 'object' && '$bigint' in value && typeof (value as { $bigint: unknown }).$bigint === 'string') {
    return BigInt((value as { $bigint: string }).$bigint);
  }
  return value;
}

export function loadNetworkState(file: string): PersistedNetwork | undefined {
  if (!fs.existsSync(file)) return undefined;
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8'), reviver) as PersistedNetwork;
  if (parsed.version !== 1) throw new Error(`${file}: unsupported local network state version ${String(parsed.version)}`);
  return parsed;
}

export function saveNetworkState(file: string, state: PersistedNetwork): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, JSON.stringify(state, replacer), { mode: 0o600 });
  fs.renameSync(temp, file);
}
