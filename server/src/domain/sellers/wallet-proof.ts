import crypto from 'node:crypto';
import { Keypair } from '@stellar/stellar-sdk';

/**
 * Wallet proof for seller sign-up, in the manner of SEP-10: the service issues a short-lived, single-use challenge
 * naming the wallet; the wallet signs its message with SEP-53 signed-message semantics (ed25519 over
 * SHA-256("Stellar Signed Message:\n" + message)); sign-up verifies that signature for the wallet being registered.
 */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000;
export const CHALLENGE_ID = /^wch_[A-Za-z0-9_-]{32}$/;

export function newChallengeId(): string {
  return `wch_${crypto.randomBytes(24).toString('base64url')}`;
}

export function challengeMessage(walletAddress: string, challengeId: string, expiresAt: Date): string {
  return (
    `Paid API Marketplace seller sign-up\nwallet: ${walletAddress}\nchallenge: ${challengeId}\nexpires: ` +
    `${expiresAt.toISOString()}`
  );
}

/** The SEP-53 digest of a message: SHA-256("Stellar Signed Message:\n" + message), message as UTF-8. */
export function sep53Digest(message: string): Buffer {
  return crypto
    .createHash('sha256')
    .update(Buffer.concat([Buffer.from('Stellar Signed Message:\n', 'utf8'), Buffer.from(message, 'utf8')]))
    .digest();
}

/** Whether `signature` (base64 or base64url of 64 bytes) is the wallet's SEP-53 signature of `message`. */
export function verifyWalletSignature(walletAddress: string, message: string, signature: string): boolean {
  const bytes = Buffer.from(signature.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length !== 64) return false;
  try {
    return Keypair.fromPublicKey(walletAddress).verify(sep53Digest(message), bytes);
  } catch {
    return false;
  }
}
