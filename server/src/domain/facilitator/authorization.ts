import crypto from 'node:crypto';
import { Address, StrKey, scValToNative, xdr } from '@stellar/stellar-sdk';
import { DomainError } from '../errors';

/**
 * The buyer's payment authorization (x402 `exact` on Stellar): a SorobanAuthorizationEntry with address
 * credentials whose root invocation is the asset contract's `transfer(from, to, amount)`. Parsing never trusts the
 * client: the entry is decoded from XDR, its shape checked, and the signature verified here with node:crypto.
 */
export interface ParsedAuthorization {
  /** The signed entry, canonical base64 XDR (what is hashed and submitted). */
  entryXdr: string;
  entry: xdr.SorobanAuthorizationEntry;
  /** The `from` of the transfer and the address of the credentials (the payer). */
  payer: string;
  to: string;
  amount: bigint;
  contractId: string;
  nonce: string;
  signatureExpirationLedger: number;
  /** The payer's raw Ed25519 public key (32 bytes), as the entry carries it (no strkey decode to compare keys). */
  payerKey?: Buffer;
}

const invalid = (message: string) => new DomainError('INVALID_PAYMENT_PAYLOAD', message);

function decodeEntry(format: string, b64: string): xdr.SorobanAuthorizationEntry {
  if (format === 'sorobanAuthorizationEntry') {
    try {
      return xdr.SorobanAuthorizationEntry.fromXDR(b64, 'base64');
    } catch {
      throw invalid('authorization.xdr is not a SorobanAuthorizationEntry');
    }
  }
  if (format === 'transaction') {
    let env: xdr.TransactionEnvelope;
    try {
      env = xdr.TransactionEnvelope.fromXDR(b64, 'base64');
    } catch {
      throw invalid('authorization.xdr is not a TransactionEnvelope');
    }
    const kind = env.switch().name;
    if (kind !== 'envelopeTypeTx') throw invalid('the transaction envelope must be a plain v1 transaction');
    const ops = env.v1().tx().operations();
    if (ops.length !== 1 || ops[0].body().switch().name !== 'invokeHostFunction') {
      throw invalid('the transaction must hold exactly one invokeHostFunction operation');
    }
    const auth = ops[0].body().invokeHostFunctionOp().auth();
    const signed = auth.filter((a) => a.credentials().switch().name === 'sorobanCredentialsAddress');
    if (signed.length !== 1) throw invalid('the transaction must carry exactly one address-credential authorization entry');
    return signed[0];
  }
  throw invalid(`unknown authorization format ${format}`);
}

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

/** Decodes and checks the shape of the authorization; throws INVALID_PAYMENT_PAYLOAD when it is not one transfer. */
export function parseAuthorization(format: string, b64: string): ParsedAuthorization {
  const entry = decodeEntry(format, b64);
  const creds = entry.credentials();
  if (creds.switch().name !== 'sorobanCredentialsAddress') throw invalid('the authorization entry must have address credentials');
  const ac = creds.address();
  const root = entry.rootInvocation();
  if (root.subInvocations().length !== 0) throw invalid('the authorization must not carry sub-invocations');
  const fn = root.function();
  if (fn.switch().name !== 'sorobanAuthorizedFunctionTypeContractFn') throw invalid('the authorized function must be a contract call');
  const call = fn.contractFn();
  const fnName = call.functionName().toString();
  if (fnName !== 'transfer') throw invalid('the authorized call must be transfer(from, to, amount)');
  const args = call.args();
  if (args.length !== 3 || args[0].switch().name !== 'scvAddress' || args[1].switch().name !== 'scvAddress' || args[2].switch().name !== 'scvI128') {
    throw invalid('the authorized call must be transfer(from: Address, to: Address, amount: i128)');
  }
  const contractAddress = call.contractAddress();
  if (contractAddress.switch().name !== 'scAddressTypeContract') throw invalid('the transfer must call an asset contract');
  const payer = addressString(ac.address());
  const from = addressString(args[0].address());
  if (from !== payer) throw invalid('the transfer must be from the address that signed the authorization');
  // an account address is a G... strkey of its 32-byte key by construction (what StrKey.isValidEd25519PublicKey checked)
  if (ac.address().switch().name !== 'scAddressTypeAccount') throw invalid('the payer must be a Stellar account (G...) address');
  const amount = scValToNative(args[2]) as bigint;
  if (typeof amount !== 'bigint' || amount <= 0n) throw invalid('the transfer amount must be positive');
  return {
    entryXdr: entry.toXDR('base64'),
    entry,
    payer,
    to: addressString(args[1].address()),
    amount,
    contractId: addressString(contractAddress),
    nonce: ac.nonce().toString(),
    signatureExpirationLedger: ac.signatureExpirationLedger(),
    payerKey: ac.address().accountId().ed25519(),
  };
}

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** Most payer keys kept as KeyObjects (public data); the least recently used is dropped beyond it. */
const KEY_OBJECT_CACHE_MAX = 10_000;
const keyObjects = new Map<string, crypto.KeyObject>();

/** The KeyObject of a raw Ed25519 public key, made once per payer (crypto.createPublicKey was 3 % of a verify). */
function ed25519PublicKey(raw: Buffer): crypto.KeyObject {
  const id = raw.toString('base64');
  let key = keyObjects.get(id);
  if (key) {
    keyObjects.delete(id);
  } else {
    key = crypto.createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
    if (keyObjects.size >= KEY_OBJECT_CACHE_MAX) keyObjects.delete(keyObjects.keys().next().value as string);
  }
  keyObjects.set(id, key);
  return key;
}

/** The Soroban authorization payload: sha256 of HashIdPreimage envelopeTypeSorobanAuthorization. */
export function authorizationPayload(entry: xdr.SorobanAuthorizationEntry, networkPassphrase: string): Buffer {
  const ac = entry.credentials().address();
  const preimage = xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
    new xdr.HashIdPreimageSorobanAuthorization({
      networkId: crypto.createHash('sha256').update(networkPassphrase, 'utf8').digest(),
      nonce: ac.nonce(),
      signatureExpirationLedger: ac.signatureExpirationLedger(),
      invocation: entry.rootInvocation(),
    }),
  );
  return crypto.createHash('sha256').update(preimage.toXDR()).digest();
}

/**
 * True when the entry carries a valid ed25519 signature of `payer` over the authorization payload of this network.
 * The signature is the account-contract shape: a vec of maps {public_key: bytes(32), signature: bytes(64)}.
 */
export function verifyAuthorizationSignature(parsed: ParsedAuthorization, networkPassphrase: string): boolean {
  const sig = parsed.entry.credentials().address().signature();
  if (sig.switch().name !== 'scvVec') return false;
  const items = sig.vec() ?? [];
  if (items.length !== 1) return false;
  const item = items[0];
  if (item.switch().name !== 'scvMap') return false;
  let publicKey: Buffer | null = null;
  let signature: Buffer | null = null;
  for (const e of item.map() ?? []) {
    if (e.key().switch().name !== 'scvSymbol' || e.val().switch().name !== 'scvBytes') return false;
    const k = e.key().sym().toString();
    if (k === 'public_key') publicKey = e.val().bytes();
    else if (k === 'signature') signature = e.val().bytes();
    else return false;
  }
  if (!publicKey || !signature || publicKey.length !== 32 || signature.length !== 64) return false;
  if (!publicKey.equals(parsed.payerKey ?? StrKey.decodeEd25519PublicKey(parsed.payer))) return false;
  return crypto.verify(null, authorizationPayload(parsed.entry, networkPassphrase), ed25519PublicKey(publicKey), signature);
}
