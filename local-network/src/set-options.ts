import { Operation, xdr } from '@stellar/stellar-sdk';
import { MAX_SIGNERS } from './account-signers';
import { availableNative } from './balances';
import { BASE_RESERVE } from './constants';
import { AccountRecord, SignerRecord, entryKey, getAccount, thresholdsOf } from './ledger-state';
import { OperationContext, OperationOutcome, done, inner } from './operation-outcome';

/**
 * The classic setOptions operation: master key weight, low/medium/high thresholds, extra ed25519 signers (weight 0
 * removes one; each takes a reserve), and account flags (AUTH_REQUIRED, AUTH_REVOCABLE, AUTH_IMMUTABLE,
 * AUTH_CLAWBACK_ENABLED). Home domain and inflation destination are accepted and not kept. Other signer kinds
 * (pre-authorized transaction, hash(x), signed payload) answer opNotSupported.
 */

export const AccountFlags = { authRequired: 1, authRevocable: 2, authImmutable: 4, authClawbackEnabled: 8 } as const;
const KNOWN_FLAGS = 15;

type SetOptionsCode =
  | 'setOptionsSuccess'
  | 'setOptionsLowReserve'
  | 'setOptionsTooManySigners'
  | 'setOptionsBadFlags'
  | 'setOptionsCantChange'
  | 'setOptionsUnknownFlag'
  | 'setOptionsThresholdOutOfRange'
  | 'setOptionsBadSigner'
  | 'setOptionsAuthRevocableRequired';

const wrap = (code: SetOptionsCode): OperationOutcome =>
  done(inner(xdr.OperationResultTr.setOptions(xdr.SetOptionsResult[code]())), code === 'setOptionsSuccess');

function newFlags(account: AccountRecord, op: Operation.SetOptions): number | SetOptionsCode {
  const set = Number(op.setFlags ?? 0);
  const clear = Number(op.clearFlags ?? 0);
  if ((set | clear) & ~KNOWN_FLAGS) return 'setOptionsUnknownFlag';
  if (set & clear) return 'setOptionsBadFlags';
  const current = account.flags ?? 0;
  if ((set | clear) !== 0 && current & AccountFlags.authImmutable) return 'setOptionsCantChange';
  const flags = (current & ~clear) | set;
  if (flags & AccountFlags.authClawbackEnabled && !(flags & AccountFlags.authRevocable))
    return 'setOptionsAuthRevocableRequired';
  return flags;
}

function newThresholds(
  account: AccountRecord,
  op: Operation.SetOptions,
): [number, number, number, number] | SetOptionsCode {
  const [master, low, med, high] = thresholdsOf(account);
  const next: [number, number, number, number] = [
    op.masterWeight ?? master,
    op.lowThreshold ?? low,
    op.medThreshold ?? med,
    op.highThreshold ?? high,
  ];
  return next.every((n) => Number.isInteger(n) && n >= 0 && n <= 255) ? next : 'setOptionsThresholdOutOfRange';
}

/** The account's signers after `op`; the change in sub-entries it makes. */
function newSigners(
  source: string,
  account: AccountRecord,
  op: Operation.SetOptions,
): { signers: SignerRecord[]; delta: number } | SetOptionsCode | 'unsupported' {
  const signers = [...(account.signers ?? [])];
  if (!op.signer) return { signers, delta: 0 };
  if (!('ed25519PublicKey' in op.signer)) return 'unsupported';
  const key = op.signer.ed25519PublicKey;
  const weight = op.signer.weight ?? 0;
  if (key === source || weight > 255) return 'setOptionsBadSigner';
  const index = signers.findIndex((s) => s.key === key);
  if (weight === 0) {
    if (index < 0) return { signers, delta: 0 };
    signers.splice(index, 1);
    return { signers, delta: -1 };
  }
  if (index >= 0) {
    signers[index] = { key, weight };
    return { signers, delta: 0 };
  }
  if (signers.length >= MAX_SIGNERS) return 'setOptionsTooManySigners';
  signers.push({ key, weight });
  signers.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { signers, delta: 1 };
}

export function setOptions(ctx: OperationContext, source: string, op: Operation.SetOptions): OperationOutcome {
  const account = getAccount(ctx.view, source);
  if (!account) return wrap('setOptionsBadSigner');
  const flags = newFlags(account, op);
  if (typeof flags === 'string') return wrap(flags);
  const thresholds = newThresholds(account, op);
  if (typeof thresholds === 'string') return wrap(thresholds);
  const change = newSigners(source, account, op);
  if (change === 'unsupported') return done(xdr.OperationResult.opNotSupported(), false);
  if (typeof change === 'string') return wrap(change);
  if (change.delta > 0 && availableNative(account) < BASE_RESERVE) return wrap('setOptionsLowReserve');
  ctx.view.set(entryKey.account(source), {
    ...account,
    thresholds,
    signers: change.signers,
    flags,
    numSubEntries: account.numSubEntries + change.delta,
    lastModified: ctx.ledgerSeq,
  });
  return wrap('setOptionsSuccess');
}
