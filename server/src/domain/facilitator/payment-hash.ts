import crypto from 'node:crypto';

/** The payment hash: sha256 (hex) of the signed authorization entry XDR. Deterministic for one authorization. */
export function paymentHash(entryXdr: string): string {
  return crypto.createHash('sha256').update(Buffer.from(entryXdr, 'base64')).digest('hex');
}
