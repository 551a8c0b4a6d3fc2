/**
 * The ledger's entries, held as plain records keyed by a namespaced string. `LedgerStore` is the committed state;
 * `LedgerOverlay` is a copy-on-write view over any `LedgerView` that collects writes and either commits them to its
 * parent or is thrown away. Simulation, transaction apply and operation apply each run in their own overlay, so a
 * failed operation leaves no trace and a simulation never changes the ledger.
 */

export interface AccountRecord {
  kind: 'account';
  balance: bigint;
  seqNum: bigint;
  numSubEntries: number;
  lastModified: number;
}

export interface TrustlineRecord {
  kind: 'trustline';
  balance: bigint;
  limit: bigint;
  lastModified: number;
}

/** A Stellar Asset Contract balance held by a contract address (G accounts hold theirs in accounts/trustlines). */
export interface ContractBalanceRecord {
  kind: 'contractBalance';
  amount: bigint;
  lastModified: number;
}

/** A consumed Soroban authorization nonce; it lives until its signature expiration ledger, like the real entry. */
export interface NonceRecord {
  kind: 'nonce';
  expirationLedger: number;
  lastModified: number;
}

export type LedgerRecord = AccountRecord | TrustlineRecord | ContractBalanceRecord | NonceRecord;

export const entryKey = {
  account: (accountId: string): string => `account:${accountId}`,
  /** assetId is the SEP-11 string "CODE:ISSUER". */
  trustline: (accountId: string, assetId: string): string => `trustline:${accountId}:${assetId}`,
  contractBalance: (holder: string, contractId: string): string => `contractBalance:${holder}:${contractId}`,
  nonce: (address: string, nonce: bigint): string => `nonce:${address}:${nonce}`,
};

export interface LedgerView {
  get(key: string): LedgerRecord | undefined;
  set(key: string, record: LedgerRecord): void;
  delete(key: string): void;
}

export function getAccount(view: LedgerView, accountId: string): AccountRecord | undefined {
  const record = view.get(entryKey.account(accountId));
  return record?.kind === 'account' ? record : undefined;
}

export function getTrustline(view: LedgerView, accountId: string, assetId: string): TrustlineRecord | undefined {
  const record = view.get(entryKey.trustline(accountId, assetId));
  return record?.kind === 'trustline' ? record : undefined;
}

export function getContractBalance(view: LedgerView, holder: string, contractId: string): ContractBalanceRecord | undefined {
  const record = view.get(entryKey.contractBalance(holder, contractId));
  return record?.kind === 'contractBalance' ? record : undefined;
}

export function getNonce(view: LedgerView, address: string, nonce: bigint): NonceRecord | undefined {
  const record = view.get(entryKey.nonce(address, nonce));
  return record?.kind === 'nonce' ? record : undefined;
}

/** The committed ledger state. */
export class LedgerStore implements LedgerView {
  private readonly entries = new Map<string, LedgerRecord>();

  constructor(initial: Iterable<[string, LedgerRecord]> = []) {
    for (const [key, record] of initial) this.entries.set(key, record);
  }

  get(key: string): LedgerRecord | undefined {
    return this.entries.get(key);
  }

  set(key: string, record: LedgerRecord): void {
    this.entries.set(key, record);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  all(): IterableIterator<[string, LedgerRecord]> {
    return this.entries.entries();
  }

  /** Drops nonce entries whose expiration ledger has passed: an expired authorization fails anyway. */
  evictExpiredNonces(currentLedger: number): void {
    for (const [key, record] of this.entries) {
      if (record.kind === 'nonce' && record.expirationLedger < currentLedger) this.entries.delete(key);
    }
  }
}

/** A copy-on-write view: reads fall through to the parent, writes stay here until commit(). */
export class LedgerOverlay implements LedgerView {
  private readonly writes = new Map<string, LedgerRecord | null>();

  constructor(private readonly parent: LedgerView) {}

  get(key: string): LedgerRecord | undefined {
    if (this.writes.has(key)) return this.writes.get(key) ?? undefined;
    return this.parent.get(key);
  }

  set(key: string, record: LedgerRecord): void {
    this.writes.set(key, record);
  }

  delete(key: string): void {
    this.writes.set(key, null);
  }

  /** Keys written (or deleted) in this overlay, in first-write order. */
  changedKeys(): string[] {
    return [...this.writes.keys()];
  }

  /** Reads the parent's value, i.e. the state before this overlay's writes. */
  before(key: string): LedgerRecord | undefined {
    return this.parent.get(key);
  }

  commit(): void {
    for (const [key, record] of this.writes) {
      if (record) this.parent.set(key, record);
      else this.parent.delete(key);
    }
    this.writes.clear();
  }
}
