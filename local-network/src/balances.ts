import { StrKey } from '@stellar/stellar-sdk';
import { ACCOUNT_BASE_RESERVE_ENTRIES, BASE_RESERVE, MAX_INT64 } from './constants';
import {
  AccountRecord,
  LedgerView,
  TrustlineRecord,
  entryKey,
  getAccount,
  getContractBalance,
  getTrustline,
  liabilitiesOf,
} from './ledger-state';

/** What a balance move needs to know about an asset. Issued assets without a SAC have no contractId. */
export interface AssetRef {
  /** "native" or "CODE:ISSUER". */
  assetId: string;
  /** Empty for native. */
  issuer: string;
  contractId?: string;
}

export type BalanceError = 'noAccount' | 'noTrust' | 'underfunded' | 'lineFull' | 'notAuthorized';

/** Trustline flag AUTHORIZED_FLAG: without it (frozen by the issuer) the line can neither send nor receive. */
export const TRUSTLINE_AUTHORIZED = 1;

export function isAuthorized(line: TrustlineRecord): boolean {
  return ((line.flags ?? TRUSTLINE_AUTHORIZED) & TRUSTLINE_AUTHORIZED) !== 0;
}

/** Minimum XLM an account must keep: (2 + sub-entries) base reserves. */
export function minimumBalance(account: AccountRecord): bigint {
  return (ACCOUNT_BASE_RESERVE_ENTRIES + BigInt(account.numSubEntries)) * BASE_RESERVE;
}

/** XLM an account can spend (on fees or payments) without going below its reserve and its offers' selling liabilities.
 * */
export function availableNative(account: AccountRecord): bigint {
  const available = account.balance - minimumBalance(account) - liabilitiesOf(account).selling;
  return available > 0n ? available : 0n;
}

/** What a trustline can send: its balance less the selling liabilities of its offers. */
export function availableOnLine(line: TrustlineRecord): bigint {
  return line.balance - liabilitiesOf(line).selling;
}

/** What a trustline can still receive: its limit less its balance and the buying liabilities of its offers. */
export function roomOnLine(line: TrustlineRecord): bigint {
  return line.limit - line.balance - liabilitiesOf(line).buying;
}

const isNative = (asset: AssetRef): boolean => asset.assetId === 'native';

/** Balance of `holder` (G account or C contract) in `asset`; the issuer's own balance is unlimited (null). */
export function balanceOf(view: LedgerView, holder: string, asset: AssetRef): bigint | null {
  if (StrKey.isValidContract(holder)) {
    return asset.contractId ? (getContractBalance(view, holder, asset.contractId)?.amount ?? 0n) : 0n;
  }
  if (isNative(asset)) return getAccount(view, holder)?.balance ?? 0n;
  if (holder === asset.issuer) return null;
  return getTrustline(view, holder, asset.assetId)?.balance ?? 0n;
}

/** Takes `amount` from `holder`. Sending from the issuer mints; XLM keeps the account reserve. */
export function debit(
  view: LedgerView,
  holder: string,
  asset: AssetRef,
  amount: bigint,
  ledger: number,
): BalanceError | null {
  if (StrKey.isValidContract(holder)) {
    if (!asset.contractId) return 'noTrust';
    const current = getContractBalance(view, holder, asset.contractId)?.amount ?? 0n;
    if (current < amount) return 'underfunded';
    view.set(entryKey.contractBalance(holder, asset.contractId), {
      kind: 'contractBalance',
      amount: current - amount,
      lastModified: ledger,
    });
    return null;
  }
  const account = getAccount(view, holder);
  if (!account) return 'noAccount';
  if (isNative(asset)) {
    if (availableNative(account) < amount) return 'underfunded';
    view.set(entryKey.account(holder), { ...account, balance: account.balance - amount, lastModified: ledger });
    return null;
  }
  if (holder === asset.issuer) return null;
  const line = getTrustline(view, holder, asset.assetId);
  if (!line) return 'noTrust';
  if (!isAuthorized(line)) return 'notAuthorized';
  if (availableOnLine(line) < amount) return 'underfunded';
  view.set(entryKey.trustline(holder, asset.assetId), {
    ...line,
    balance: line.balance - amount,
    lastModified: ledger,
  });
  return null;
}

/** Gives `amount` to `holder`. Sending to the issuer burns; a trustline is required and its limit applies. */
export function credit(
  view: LedgerView,
  holder: string,
  asset: AssetRef,
  amount: bigint,
  ledger: number,
): BalanceError | null {
  if (StrKey.isValidContract(holder)) {
    if (!asset.contractId) return 'noTrust';
    const current = getContractBalance(view, holder, asset.contractId)?.amount ?? 0n;
    if (current + amount > MAX_INT64) return 'lineFull';
    view.set(entryKey.contractBalance(holder, asset.contractId), {
      kind: 'contractBalance',
      amount: current + amount,
      lastModified: ledger,
    });
    return null;
  }
  const account = getAccount(view, holder);
  if (!account) return 'noAccount';
  if (isNative(asset)) {
    if (account.balance + amount + liabilitiesOf(account).buying > MAX_INT64) return 'lineFull';
    view.set(entryKey.account(holder), { ...account, balance: account.balance + amount, lastModified: ledger });
    return null;
  }
  if (holder === asset.issuer) return null;
  const line = getTrustline(view, holder, asset.assetId);
  if (!line) return 'noTrust';
  if (!isAuthorized(line)) return 'notAuthorized';
  if (roomOnLine(line) < amount) return 'lineFull';
  view.set(entryKey.trustline(holder, asset.assetId), {
    ...line,
    balance: line.balance + amount,
    lastModified: ledger,
  });
  return null;
}
