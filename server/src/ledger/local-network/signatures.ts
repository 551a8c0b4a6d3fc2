import { Keypair, xdr } from '@stellar/stellar-sdk';
import { verifyEd25519 } from './ed25519';

export type SignatureCheck = 'ok' | 'missing' | 'extra';

/**
 * Checks that each required account (master key, weight 1, the only signer the simulator models) signed `txHash`
 * with a valid ed25519 signature whose hint matches, and that no signature is left unused (txBadAuthExtra).
 */
export function checkSignatures(txHash: Buffer, signatures: xdr.DecoratedSignature[], requiredAccounts: string[]): SignatureCheck {
  const used = new Set<number>();
  for (const account of new Set(requiredAccounts)) {
    const keypair = Keypair.fromPublicKey(account);
    const hint = keypair.signatureHint();
    const index = signatures.findIndex(
      (sig, i) => !used.has(i) && sig.hint().equals(hint) && verifyEd25519(keypair.rawPublicKey(), txHash, sig.signature()),
    );
    if (index < 0) return 'missing';
    used.add(index);
  }
  return used.size === signatures.length ? 'ok' : 'extra';
}
