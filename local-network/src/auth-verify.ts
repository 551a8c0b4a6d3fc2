import { randomBytes } from 'node:crypto';
import { Address, StrKey, hash, xdr } from '@stellar/stellar-sdk';
import {
  addressCredentialVersion,
  addressCredentials,
  addressCredentialsOf,
  authorizationPreimage,
  credentialKind,
} from './cap71-xdr';
import { MAX_ENTRY_TTL } from './constants';
import { checkAccountContractAuth } from './account-contract';
import { signerWeight, thresholdOf } from './account-signers';
import { verifyEd25519 } from './ed25519';
import { FootprintRecorder } from './footprint';
import { HostError } from './host-error';
import { ledgerKeys } from './ledger-entries';
import { LedgerView, entryKey, getAccount, getNonce } from './ledger-state';

/**
 * Soroban authorization as the host enforces it for `require_auth(address)`:
 * - source-account credentials authorize the operation's source account;
 * - address credentials of a G account need ed25519 signatures over sha256(HashIdPreimage
 *   envelopeTypeSorobanAuthorization {networkId = sha256(passphrase), nonce, signatureExpirationLedger,
 *   invocation}), where the signature ScVal is a vec of maps {public_key: bytes, signature: bytes} sorted by
 *   public key, whose signers' weights reach the account's medium threshold; the nonce is consumed once per
 *   address; the entry expires after its signatureExpirationLedger;
 * - address credentials of a C address run that contract's __check_auth (see account-contract.ts);
 * - CAP-71 V2 address credentials (sorobanCredentialsAddressV2, protocol 27) are enforced the same way over
 *   HashIdPreimage envelopeTypeSorobanAuthorizationWithAddress, which also names the credential's address;
 * - CAP-71 delegated credentials (sorobanCredentialsAddressWithDelegates) are refused: the local network has no
 *   Wasm account contract that could call delegate_account_auth (local deviation, named in the error).
 * In recording mode (simulation without auth entries) it produces the entries a client must sign instead: V1
 * address credentials, or V2 ones when the simulation asked for upgraded auth.
 */

export type AuthMode = 'enforce' | 'record';

export interface AuthContext {
  view: LedgerView;
  networkId: Buffer;
  /** The ledger the invocation runs in (latest closed + 1). */
  currentLedger: number;
  /** The operation's source account: the invoker, whose authorization comes with the transaction signature. */
  invoker: string;
  mode: AuthMode;
  /** Recording mode produces V2 address credentials (CAP-71) instead of V1. */
  upgradedAuth?: boolean;
  entries: xdr.SorobanAuthorizationEntry[];
  footprint: FootprintRecorder;
  /** Entries produced in recording mode. */
  recorded: xdr.SorobanAuthorizationEntry[];
}

/** sha256 of the entry's HashIdPreimage: V1 without the address, V2 with it (cap71-xdr.ts `authorizationPreimage`). */
export function authorizationPayload(networkId: Buffer, entry: xdr.SorobanAuthorizationEntry): Buffer {
  const creds = entry.credentials();
  return hash(
    authorizationPreimage(
      addressCredentialVersion(creds) ?? 1,
      networkId,
      addressCredentialsOf(creds)!,
      entry.rootInvocation(),
    ).toXDR(),
  );
}

function rootInvocationOf(call: xdr.InvokeContractArgs): xdr.SorobanAuthorizedInvocation {
  return new xdr.SorobanAuthorizedInvocation({
    function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(call),
    subInvocations: [],
  });
}

function randomNonce(): xdr.Int64 {
  return xdr.Int64.fromString(randomBytes(8).readBigInt64BE().toString());
}

function record(ctx: AuthContext, address: string, call: xdr.InvokeContractArgs): void {
  const rootInvocation = rootInvocationOf(call);
  if (address === ctx.invoker) {
    ctx.recorded.push(
      new xdr.SorobanAuthorizationEntry({
        credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
        rootInvocation,
      }),
    );
    return;
  }
  const nonce = randomNonce();
  const nonceValue = BigInt(nonce.toString());
  // The account contract's __check_auth reads its instance when the signed entry is enforced.
  if (StrKey.isValidContract(address)) ctx.footprint.read(ledgerKeys.contractInstance(address));
  // Recording mode accounts for the nonce entry the signed invocation will write, as the real simulation does.
  ctx.footprint.write(ledgerKeys.nonce(address, nonceValue));
  ctx.view.set(entryKey.nonce(address, nonceValue), {
    kind: 'nonce',
    expirationLedger: ctx.currentLedger,
    lastModified: ctx.currentLedger,
  });
  ctx.recorded.push(
    new xdr.SorobanAuthorizationEntry({
      credentials: addressCredentials(
        ctx.upgradedAuth ? 2 : 1,
        new xdr.SorobanAddressCredentials({
          address: new Address(address).toScAddress(),
          nonce,
          signatureExpirationLedger: 0,
          signature: xdr.ScVal.scvVoid(),
        }),
      ),
      rootInvocation,
    }),
  );
}

interface SignaturePair {
  publicKey: Buffer;
  signature: Buffer;
}

/** soroban-env-host MAX_ACCOUNT_SIGNATURES. */
const MAX_ACCOUNT_SIGNATURES = 20;

/** The built-in account contract's failure: ContractError::AuthenticationError (#5), as the host reports it. */
function authenticationError(detail: string): HostError {
  return new HostError('Auth', 'InvalidAction', `Error(Contract, #5): ${detail}`);
}

function parseSignatures(signature: xdr.ScVal): SignaturePair[] {
  if (signature.switch().name !== 'scvVec') {
    throw new HostError('Auth', 'InvalidAction', 'the authorization entry carries no signature (it was never signed)');
  }
  const items = signature.vec() ?? [];
  if (items.length > MAX_ACCOUNT_SIGNATURES) throw authenticationError(`too many account signers: ${items.length}`);
  if (items.length === 0) throw authenticationError('no account signatures found');
  return items.map((item) => {
    if (item.switch().name !== 'scvMap')
      throw new HostError('Auth', 'InvalidInput', 'each account signature must be a map {public_key, signature}');
    const fields = new Map<string, xdr.ScVal>();
    for (const entry of item.map() ?? []) {
      if (entry.key().switch().name !== 'scvSymbol')
        throw new HostError('Auth', 'InvalidInput', 'account signature map keys must be symbols');
      fields.set(entry.key().sym().toString(), entry.val());
    }
    const publicKey = fields.get('public_key');
    const sig = fields.get('signature');
    if (fields.size !== 2 || publicKey?.switch().name !== 'scvBytes' || sig?.switch().name !== 'scvBytes') {
      throw new HostError('Auth', 'InvalidInput', 'account signature must be {public_key: bytes, signature: bytes}');
    }
    const pair = { publicKey: publicKey.bytes(), signature: sig.bytes() };
    if (pair.publicKey.length !== 32 || pair.signature.length !== 64) {
      throw new HostError('Auth', 'InvalidInput', 'account signature has a wrong public key or signature length');
    }
    return pair;
  });
}

/**
 * The host's check_account_authentication for a classic account: signatures sorted by public key without
 * duplicates, each a valid ed25519 signature of a key with non-zero weight on the account (the master key's
 * weight may be 0 = disabled), and the weights summing to at least the account's medium threshold.
 */
function verifyAccountSignatures(
  ctx: AuthContext,
  accountId: string,
  creds: xdr.SorobanAddressCredentials,
  payload: Buffer,
): void {
  const account = getAccount(ctx.view, accountId);
  if (!account) throw new HostError('Auth', 'InvalidInput', `account ${accountId} does not exist`);
  const pairs = parseSignatures(creds.signature());
  let previous: Buffer | undefined;
  let weight = 0;
  for (const pair of pairs) {
    if (previous && Buffer.compare(previous, pair.publicKey) >= 0)
      throw authenticationError('public keys are not ordered');
    previous = pair.publicKey;
    if (!verifyEd25519(pair.publicKey, payload, pair.signature)) {
      throw new HostError(
        'Crypto',
        'InvalidInput',
        `ed25519 signature of ${accountId} does not verify over the authorization preimage`,
      );
    }
    const signer = StrKey.encodeEd25519PublicKey(pair.publicKey);
    const signerWeightOnAccount = signerWeight(accountId, account, signer);
    if (signerWeightOnAccount === 0)
      throw authenticationError(`signer ${signer} does not belong to account ${accountId} (it is not a signer of it)`);
    weight += signerWeightOnAccount;
  }
  const threshold = thresholdOf(account, 'medium');
  if (weight < threshold)
    throw authenticationError(`signature weight is lower than threshold: ${weight} < ${threshold}`);
}

function enforceAddressCredentials(ctx: AuthContext, address: string, entry: xdr.SorobanAuthorizationEntry): void {
  const creds = addressCredentialsOf(entry.credentials())!;
  const expiration = creds.signatureExpirationLedger();
  if (expiration < ctx.currentLedger) {
    throw new HostError(
      'Auth',
      'InvalidInput',
      `signature has expired: expiration ledger ${expiration} is before the current ledger ${ctx.currentLedger}`,
    );
  }
  if (expiration > ctx.currentLedger + MAX_ENTRY_TTL - 1) {
    throw new HostError(
      'Auth',
      'InvalidInput',
      `signature expiration ledger ${expiration} is further than the maximum entry lifetime allows`,
    );
  }
  const nonce = BigInt(creds.nonce().toString());
  ctx.footprint.write(ledgerKeys.nonce(address, nonce));
  if (getNonce(ctx.view, address, nonce)) {
    throw new HostError('Auth', 'ExistingValue', `nonce ${nonce} was already used by ${address}`);
  }
  const payload = authorizationPayload(ctx.networkId, entry);
  if (StrKey.isValidContract(address)) {
    ctx.footprint.read(ledgerKeys.contractInstance(address));
    checkAccountContractAuth(ctx.view, address, payload, creds.signature());
  } else {
    verifyAccountSignatures(ctx, address, creds, payload);
  }
  ctx.view.set(entryKey.nonce(address, nonce), {
    kind: 'nonce',
    expirationLedger: expiration,
    lastModified: ctx.currentLedger,
  });
}

/** `require_auth(address)` for a root contract call. Throws HostError when the authorization is missing or invalid. */
export function requireAuth(ctx: AuthContext, address: string, call: xdr.InvokeContractArgs): void {
  if (ctx.mode === 'record') {
    record(ctx, address, call);
    return;
  }
  const wanted = xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(call).toXDR('base64');
  for (const entry of ctx.entries) {
    if (entry.rootInvocation().function().toXDR('base64') !== wanted) continue;
    const creds = entry.credentials();
    if (creds.switch().name === 'sorobanCredentialsSourceAccount') {
      if (address === ctx.invoker) return;
      continue;
    }
    if (credentialKind(creds) === 'sorobanCredentialsAddressWithDelegates') {
      throw new HostError(
        'Auth',
        'InvalidInput',
        'delegated credentials (CAP-71 sorobanCredentialsAddressWithDelegates) are not supported by the local ' +
          'network: it runs no Wasm account contract that could delegate',
      );
    }
    if (Address.fromScAddress(addressCredentialsOf(creds)!.address()).toString() !== address) continue;
    enforceAddressCredentials(ctx, address, entry);
    return;
  }
  throw new HostError(
    'Auth',
    'InvalidAction',
    `Unauthorized function call for address ${address}: no authorization entry matches the invocation`,
  );
}
