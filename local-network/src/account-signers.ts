import { Keypair, Operation, xdr } from '@stellar/stellar-sdk';
import { verifyEd25519 } from './ed25519';
import { AccountRecord, LedgerView, getAccount, thresholdsOf } from './ledger-state';

/**
 * Classic account signers as stellar-core and the Soroban host see them: the master key (weight = thresholds[0],
 * 0 = disabled) plus the extra ed25519 signers set with setOptions, and the low/medium/high thresholds.
 */

export type ThresholdLevel = 'low' | 'medium' | 'high';
const LEVEL_INDEX: Record<ThresholdLevel, 1 | 2 | 3> = { low: 1, medium: 2, high: 3 };

/** Maximum extra signers per account (stellar-core MAX_SIGNERS). */
export const MAX_SIGNERS = 20;

/** The weight `publicKey` (G...) carries on `account`; 0 when it is no signer (or the disabled master key). */
export function signerWeight(accountId: string, account: AccountRecord | undefined, publicKey: string): number {
  if (publicKey === accountId) return account ? thresholdsOf(account)[0] : 1;
  return account?.signers?.find((s) => s.key === publicKey)?.weight ?? 0;
}

/** Every key with a non-zero weight on the account (a missing account has only its master key, weight 1). */
export function signersOf(
  accountId: string,
  account: AccountRecord | undefined,
): Array<{ key: string; weight: number }> {
  const master = account ? thresholdsOf(account)[0] : 1;
  const extra = account?.signers ?? [];
  return [...(master > 0 ? [{ key: accountId, weight: master }] : []), ...extra.filter((s) => s.weight > 0)];
}

export function thresholdOf(account: AccountRecord | undefined, level: ThresholdLevel): number {
  return account ? thresholdsOf(account)[LEVEL_INDEX[level]] : 0;
}

/** The threshold an operation needs from its source account, as stellar-core assigns them. */
export function operationThreshold(op: Operation): ThresholdLevel {
  switch (op.type) {
    case 'setOptions': {
      const o = op as Operation.SetOptions;
      const high =
        o.masterWeight !== undefined ||
        o.lowThreshold !== undefined ||
        o.medThreshold !== undefined ||
        o.highThreshold !== undefined ||
        o.signer !== undefined;
      return high ? 'high' : 'medium';
    }
    case 'allowTrust':
    case 'setTrustLineFlags':
    case 'bumpSequence':
      return 'low';
    default:
      return 'medium';
  }
}

export interface SignatureRequirement {
  account: string;
  level: ThresholdLevel;
}

/**
 * Checks `signatures` over `txHash` against each requirement: the valid signatures of the account's signers
 * (hint and ed25519 signature must match) must weigh at least the needed threshold, and at least one must be
 * present. Returns 'missing' when a requirement is not met, 'extra' when a signature matched no requirement.
 */
export function checkSignatureWeights(
  view: LedgerView,
  txHash: Buffer,
  signatures: xdr.DecoratedSignature[],
  requirements: SignatureRequirement[],
): 'ok' | 'missing' | 'extra' {
  const used = new Set<number>();
  const verified = new Map<string, number[]>();
  const matching = (key: string): number[] => {
    const known = verified.get(key);
    if (known) return known;
    const keypair = Keypair.fromPublicKey(key);
    const hint = keypair.signatureHint();
    const found = signatures.flatMap((sig, i) =>
      sig.hint().equals(hint) && verifyEd25519(keypair.rawPublicKey(), txHash, sig.signature()) ? [i] : [],
    );
    verified.set(key, found);
    return found;
  };
  for (const { account, level } of requirements) {
    const record = getAccount(view, account);
    let weight = 0;
    let signed = false;
    for (const signer of signersOf(account, record)) {
      const indexes = matching(signer.key);
      if (indexes.length === 0) continue;
      indexes.forEach((i) => used.add(i));
      weight += signer.weight;
      signed = true;
    }
    if (!signed || weight < thresholdOf(record, level)) return 'missing';
  }
  return used.size === signatures.length ? 'ok' : 'extra';
}
