import crypto from 'node:crypto';
import { Address, StrKey, xdr } from '@stellar/stellar-sdk';
import { addressCredentialVersion, addressCredentialsOf, authorizationPreimage } from './cap71-xdr';

/**
 * Helpers of the buyer's payment authorization (x402 `exact` on Stellar: a SorobanAuthorizationEntry with address
 * credentials for the asset contract's `transfer(from, to, amount)`): the payload its signatures sign, and address
 * strkeys. The rules that judge an authorization are in rules/.
 */

/**
 * Strkeys of the account and contract addresses seen (G... / C... from their 32 raw bytes), kept: the same payers,
 * recipients and asset contracts come back on every verify, and encoding one is a CRC and a base32 pass. LRU of
 * ADDRESS_CACHE_MAX; other address kinds are encoded every time.
 */
const ADDRESS_CACHE_MAX = 20_000;
const addressStrings = new Map<string, string>();

export function addressString(a: xdr.ScAddress): string {
  const kind = a.switch().name;
  let raw: Buffer;
  if (kind === 'scAddressTypeAccount') raw = a.accountId().ed25519();
  else if (kind === 'scAddressTypeContract') raw = a.contractId() as unknown as Buffer;
  else return Address.fromScAddress(a).toString();
  const id = `${kind === 'scAddressTypeAccount' ? 'G' : 'C'}${raw.toString('base64')}`;
  let text = addressStrings.get(id);
  if (text !== undefined) {
    addressStrings.delete(id);
  } else {
    text = kind === 'scAddressTypeAccount' ? StrKey.encodeEd25519PublicKey(raw) : StrKey.encodeContract(raw);
    if (addressStrings.size >= ADDRESS_CACHE_MAX) addressStrings.delete(addressStrings.keys().next().value as string);
  }
  addressStrings.set(id, text);
  return text;
}

/**
 * The Soroban authorization payload an address credential's signatures sign: sha256 of its HashIdPreimage,
 * `envelopeTypeSorobanAuthorization` for V1 credentials, `envelopeTypeSorobanAuthorizationWithAddress` (the
 * address bound in, CAP-71-02) for V2 ones (cap71-xdr.ts). Only for address credentials (V1 or V2).
 */
export function authorizationPayload(entry: xdr.SorobanAuthorizationEntry, networkPassphrase: string): Buffer {
  const creds = entry.credentials();
  const version = addressCredentialVersion(creds);
  const body = addressCredentialsOf(creds);
  if (version === null || body === null)
    throw new TypeError(`no authorization payload for ${creds.switch().name} credentials`);
  const networkId = crypto.createHash('sha256').update(networkPassphrase, 'utf8').digest();
  return crypto
    .createHash('sha256')
    .update(authorizationPreimage(version, networkId, body, entry.rootInvocation()).toXDR())
    .digest();
}
