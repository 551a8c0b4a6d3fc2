import { Address, Keypair, hash, xdr } from '@stellar/stellar-sdk';
import {
  addressCredentials,
  addressCredentialsOf,
  authorizationPreimage,
  delegatedCredentials,
} from '../../src/domain/facilitator/cap71-xdr';

/**
 * CAP-71 signing for tests, as a protocol-27 wallet (stellar-sdk 17's authorizeEntry) does it: V2 address credentials
 * carry the V1 body; their signature signs sha256(HashIdPreimage envelopeTypeSorobanAuthorizationWithAddress), which
 * names the credential's address.
 */

/** The payload a V1 or V2 credential over `address` signs. `signedAddress` overrides the address in a V2 preimage. */
export function payloadFor(
  version: 1 | 2,
  entry: xdr.SorobanAuthorizationEntry,
  expiration: number,
  passphrase: string,
  signedAddress?: string,
): Buffer {
  const body = addressCredentialsOf(entry.credentials())!;
  const address = signedAddress ? new Address(signedAddress).toScAddress() : body.address();
  const signed = new xdr.SorobanAddressCredentials({
    address,
    nonce: body.nonce(),
    signatureExpirationLedger: expiration,
    signature: xdr.ScVal.scvVoid(),
  });
  return hash(authorizationPreimage(version, hash(Buffer.from(passphrase)), signed, entry.rootInvocation()).toXDR());
}

/** The G account signature ScVal: a vec of {public_key, signature} maps sorted by key. */
export function accountSignature(signers: Keypair[], payload: Buffer): xdr.ScVal {
  const ordered = [...signers].sort((a, b) => Buffer.compare(a.rawPublicKey(), b.rawPublicKey()));
  return xdr.ScVal.scvVec(
    ordered.map((k) =>
      xdr.ScVal.scvMap([
        new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('public_key'), val: xdr.ScVal.scvBytes(k.rawPublicKey()) }),
        new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('signature'), val: xdr.ScVal.scvBytes(k.sign(payload)) }),
      ]),
    ),
  );
}

/** A copy of `entry` with `version` credentials over the same body, expiration and signature set. */
export function withCredentials(
  entry: xdr.SorobanAuthorizationEntry,
  version: 1 | 2,
  expiration: number,
  signature: xdr.ScVal,
): xdr.SorobanAuthorizationEntry {
  const body = addressCredentialsOf(entry.credentials())!;
  const next = new xdr.SorobanAddressCredentials({
    address: body.address(),
    nonce: body.nonce(),
    signatureExpirationLedger: expiration,
    signature,
  });
  return new xdr.SorobanAuthorizationEntry({
    credentials: addressCredentials(version, next),
    rootInvocation: entry.rootInvocation(),
  });
}

/** Signs an unsigned (or signed) address-credential entry as V1 or V2 for a G account with `signers`. */
export function signAccountEntry(
  entry: xdr.SorobanAuthorizationEntry,
  version: 1 | 2,
  signers: Keypair[],
  expiration: number,
  passphrase: string,
): xdr.SorobanAuthorizationEntry {
  const unsigned = withCredentials(entry, version, expiration, xdr.ScVal.scvVoid());
  return withCredentials(
    unsigned,
    version,
    expiration,
    accountSignature(signers, payloadFor(version, unsigned, expiration, passphrase)),
  );
}

/** Signs as the local network's ed25519 account contract (C payer): bytes(64) over the V1 or V2 payload. */
export function signContractEntry(
  entry: xdr.SorobanAuthorizationEntry,
  version: 1 | 2,
  key: Keypair,
  expiration: number,
  passphrase: string,
): xdr.SorobanAuthorizationEntry {
  const unsigned = withCredentials(entry, version, expiration, xdr.ScVal.scvVoid());
  return withCredentials(
    unsigned,
    version,
    expiration,
    xdr.ScVal.scvBytes(key.sign(payloadFor(version, unsigned, expiration, passphrase))),
  );
}

/** The same signed body wrapped in CAP-71 delegated credentials (no delegates). */
export function asDelegated(entry: xdr.SorobanAuthorizationEntry): xdr.SorobanAuthorizationEntry {
  return new xdr.SorobanAuthorizationEntry({
    credentials: delegatedCredentials(addressCredentialsOf(entry.credentials())!),
    rootInvocation: entry.rootInvocation(),
  });
}
