/**
 * The ledger's entries, held as plain records keyed by a namespaced string. `LedgerStore` is the committed state;
 * `LedgerOverlay` is a copy-on-write view over any `LedgerView` that collects writes and either commits them to its
 * parent or is thrown away. Simulation, transaction apply and operation apply each run in their own overlay, so a
 * failed operation leaves no trace and a simulation never changes the ledger.
 */

/** Liabilities of resting offers (stroops): what offers may sell from, and buy into, a balance. */
export interface Liabilities {
  buying: bigint;
  selling: bigint;
}

/** An extra ed25519 signer of an account (setOptions `signer`). */
export interface SignerRecord {
  /** G... strkey of the ed25519 key. */
  key: string;
  weight: number;
}

export interface AccountRecord {
  kind: 'account';
  balance: bigint;
  seqNum: bigint;
  numSubEntries: number;
  lastModified: number;
  /** [master weight, low, medium, high]; absent = [1, 0, 0, 0], the default of a new account. */
  thresholds?: [number, number, number, number];
  /** Extra ed25519 signers, sorted by key; absent = none. */
  signers?: SignerRecord[];
  /** Account flags (AUTH_REQUIRED 1, AUTH_REVOCABLE 2, AUTH_IMMUTABLE 4, AUTH_CLAWBACK_ENABLED 8); absent = 0. */
  flags?: number;
  /** Native (XLM) liabilities of the account's offers; absent = none. */
  liabilities?: Liabilities;
}

export interface TrustlineRecord {
  kind: 'trustline';
  balance: bigint;
  limit: bigint;
  lastModified: number;
  /** Trustline flags (AUTHORIZED 1, AUTHORIZED_TO_MAINTAIN_LIABILITIES 2, CLAWBACK_ENABLED 4); absent = 1 (authorized).
   * */
  flags?: number;
  /** Liabilities of the account's offers in this asset; absent = none. */
  liabilities?: Liabilities;
}

/** A resting offer (manageSellOffer); the local network has no matching engine, so offers never cross. */
export interface OfferRecord {
  kind: 'offer';
  offerId: bigint;
  seller: string;
  /** SEP-11 ids ("native" or "CODE:ISSUER"). */
  selling: string;
  buying: string;
  /** Amount of `selling` offered, stroops. */
  amount: bigint;
  priceN: number;
  priceD: number;
  lastModified: number;
}

/** An instance of the built-in ed25519 account contract (see account-contract.ts). */
export interface AccountContractRecord {
  kind: 'accountContract';
  /** G... strkey of the ed25519 key whose signatures the contract's __check_auth accepts. */
  publicKey: string;
  lastModified: number;
}

/** A network-wide counter (the last offer id handed out). */
export interface CounterRecord {
  kind: 'counter';
  value: bigint;
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

export type LedgerRecord =
  | AccountRecord
  | TrustlineRecord
  | ContractBalanceRecord
  | NonceRecord
  | OfferRecord
  | AccountContractRecord
  | CounterRecord;

export const entryKey = {
  account: (accountId: string): string => `account:${accountId}`,
  /** assetId is the SEP-11 string "CODE:ISSUER". */
  trustline: (accountId: string, assetId: string): string => `trustline:${accountId}:${assetId}`,
  contractBalance: (holder: string, contractId: string): string => `contractBalance:${holder}:${contractId}`,
  nonce: (address: string, nonce: bigint): string => `nonce:${address}:${nonce}`,
  offer: (seller: string, offerId: bigint): string => `offer:${seller}:${offerId}`,
  accountContract: (contractId: string): string => `accountContract:${contractId}`,
  lastOfferId: 'counter:lastOfferId',
};

export interface LedgerView {
  get(key: string): LedgerRecord | undefined;
  set(key: string, record: LedgerRecord): void;
  delete(key: string): void;
  /** Keys of live entries starting with `prefix` (a scan: for rare operations such as revoking a trustline). */
  keysWithPrefix(prefix: string): string[];
}

export function getAccount(view: LedgerView, accountId: string): AccountRecord | undefined {
  const record = view.get(entryKey.account(accountId));
  return record?.kind === 'account' ? record : undefined;
}

export function getTrustline(view: LedgerView, accountId: string, assetId: string): TrustlineRecord | undefined {
  const record = view.get(entryKey.trustline(accountId, assetId));
  return record?.kind === 'trustline' ? record : undefined;
}

export function getContractBalance(
  view: LedgerView,
  holder: string,
  contractId: string,
): ContractBalanceRecord | undefined {
  const record = view.get(entryKey.contractBalance(holder, contractId));
  return record?.kind === 'contractBalance' ? record : undefined;
}

export function getOffer(view: LedgerView, seller: string, offerId: bigint): OfferRecord | undefined {
  const record = view.get(entryKey.offer(seller, offerId));
  return record?.kind === 'offer' ? record : undefined;
}

export function getAccountContract(view: LedgerView, contractId: string): AccountContractRecord | undefined {
  const record = view.get(entryKey.accountContract(contractId));
  return record?.kind === 'accountContract' ? record : undefined;
}

/** Master weight and thresholds of an account, defaults filled in. */
export function thresholdsOf(account: AccountRecord): [number, number, number, number] {
  return account.thresholds ?? [1, 0, 0, 0];
}

export function liabilitiesOf(record: AccountRecord | TrustlineRecord): Liabilities {
  return record.liabilities ?? { buying: 0n, selling: 0n };
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

  keysWithPrefix(prefix: string): string[] {
    return [...this.entries.keys()].filter((k) => k.startsWith(prefix));
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

  keysWithPrefix(prefix: string): string[] {
    const keys = new Set(this.parent.keysWithPrefix(prefix));
    for (const [key, record] of this.writes) {
      if (!key.startsWith(prefix)) continue;
      if (record) keys.add(key);
      else keys.delete(key);
    }
    return [...keys];
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
