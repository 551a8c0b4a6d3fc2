import crypto from 'node:crypto';
import { scValToNative, xdr } from '@stellar/stellar-sdk';
import { authorizationPayload } from '../authorization';
import { addressCredentialsOf, credentialKind } from '../cap71-xdr';
import type { AssetRef } from '../types';
import type { Stroops } from '../../amount';
import type { AssetContractId } from '../../network-registry';
import { RULES } from './catalog';
import { addressOf, decodePayment, type DecodedPayment } from './decode';
import { ensure, refuse } from './rule';

/**
 * The offline rules: everything the x402 `exact` Stellar scheme requires that can be judged from the payload and
 * the requirements alone, with no ledger or database trip, so hostile traffic is turned away cheaply. Each check is
 * one rule of rules/catalog.ts; they run in the spec's order (protocol, structure, auth entries, facilitator
 * safety), then our accountability rules, then the ed25519 pre-check (the most expensive). The ledger's
 * simulation (rules/simulation.ts) stays the authority: it knows thresholds, contract accounts and balances.
 */

/** What the requirements ask for, already resolved against the configured networks. */
export interface RequiredTerms {
  scheme: string;
  network: string;
  passphrase: string;
  amount: Stroops;
  payTo: string;
  asset: AssetRef;
}

/** The terms a `/v1` payload declares beside its signed authorization (they must be the signed ones). */
export interface DeclaredTerms {
  /** null: what the payload declares is not an amount (it then differs from the signed one). */
  amount: Stroops | null;
  payTo: string;
  /** The declared asset when registered; 'unsupported' (never the signed one) when not; null: none declared. */
  assetContractId: AssetContractId | 'unsupported' | null;
  /** /v1 only (x402 declares no expiry). */
  expiresAtLedger?: number;
  payer?: string;
}

export interface OfflineInput {
  /** x402 face only. */
  x402Version?: number;
  scheme: string;
  network: string;
  required: RequiredTerms;
  declared?: DeclaredTerms;
  authorization: { format: string; xdr: string };
  /** `authorization` already decoded (once per request, by the face that read it): not decoded again. */
  decoded?: DecodedPayment;
}

export interface OfflinePolicy {
  /** Channel accounts and the fee account of the network: the facilitator's own addresses. */
  facilitatorAddresses: ReadonlySet<string>;
  /** Smallest amount settled (FACILITATOR_MIN_AMOUNT). */
  minimumStroops: Stroops;
}

/** A payment that passed the offline rules: the parts verify, settle and the records use. */
export interface CheckedPayment {
  decoded: DecodedPayment;
  hostFunction: xdr.HostFunction;
  entry: xdr.SorobanAuthorizationEntry;
  /** The payer's credential kind: V1 `sorobanCredentialsAddress` or CAP-71 V2 `sorobanCredentialsAddressV2`. */
  credentials: 'sorobanCredentialsAddress' | 'sorobanCredentialsAddressV2';
  /** The payer's entry, canonical base64 XDR (hashed into the payment hash, replayed at settlement). */
  entryXdr: string;
  payer: string;
  to: string;
  amount: Stroops;
  contractId: AssetContractId;
  nonce: string;
  signatureExpirationLedger: number;
}

export function checkProtocol(input: OfflineInput): void {
  if (input.x402Version !== undefined)
    ensure(RULES.x402Version, input.x402Version === 2, `x402Version ${input.x402Version} is not supported; send 2`);
  ensure(
    RULES.schemeExact,
    input.scheme === 'exact' && input.required.scheme === 'exact',
    'Only the exact scheme is supported',
  );
  ensure(
    RULES.networkMatches,
    input.network === input.required.network,
    'The payload network differs from the required network',
  );
}

/** Structure: one invokeHostFunction calling transfer(from, to, amount) on the required asset contract. */
export function checkStructure(
  d: DecodedPayment,
  required: RequiredTerms,
): { call: xdr.InvokeContractArgs; from: string; to: string; amount: Stroops } {
  ensure(
    RULES.plainTransaction,
    d.envelopeType === null || d.envelopeType === 'envelopeTypeTx',
    'The transaction must be a plain v1 transaction envelope',
  );
  ensure(
    RULES.singleInvoke,
    d.operationTypes.length === 1 && d.operationTypes[0] === 'invokeHostFunction',
    'The transaction must hold exactly one invokeHostFunction operation',
  );
  ensure(
    RULES.invokeContract,
    d.hostFunction?.switch().name === 'hostFunctionTypeInvokeContract',
    'The host function must invoke a contract',
  );
  const call = d.hostFunction!.invokeContract();
  const contract = call.contractAddress();
  ensure(
    RULES.contractIsAsset,
    contract.switch().name === 'scAddressTypeContract' && addressOf(contract) === required.asset.contractId,
    'The transfer is on another asset contract than the required asset',
  );
  const args = call.args();
  const typed =
    args.length === 3 &&
    args[0].switch().name === 'scvAddress' &&
    args[1].switch().name === 'scvAddress' &&
    args[2].switch().name === 'scvI128';
  ensure(
    RULES.transferCall,
    call.functionName().toString() === 'transfer' && typed,
    'The call must be transfer(from: Address, to: Address, amount: i128)',
  );
  const to = addressOf(args[1].address());
  ensure(RULES.recipient, to === required.payTo, 'The transfer pays another recipient than payTo');
  const amount = scValToNative(args[2]) as bigint;
  ensure(
    RULES.amount,
    amount === required.amount,
    `The transfer amount ${amount} differs from the required ${required.amount} (stroops)`,
  );
  // The signed amount is the required one: the checked Stroops from here on.
  return { call, from: addressOf(args[0].address()), to, amount: required.amount };
}

/** The address (G... / C...) an entry's V1 or V2 address credentials name; null for other credentials. */
export function credentialAddress(e: xdr.SorobanAuthorizationEntry): string | null {
  const body = addressCredentialsOf(e.credentials());
  return body ? addressOf(body.address()) : null;
}

/**
 * Auth entries: address credentials (V1 or CAP-71 V2) only, never delegated ones, one entry for `from` authorizing
 * exactly this call, no sub-invocations.
 */
export function checkAuthEntries(
  d: DecodedPayment,
  call: xdr.InvokeContractArgs,
  from: string,
): xdr.SorobanAuthorizationEntry {
  const kinds = d.authEntries.map((e) => credentialKind(e.credentials()));
  ensure(
    RULES.noDelegatedCredentials,
    !kinds.includes('sorobanCredentialsAddressWithDelegates'),
    'An auth entry carries delegated credentials (CAP-71 sorobanCredentialsAddressWithDelegates); sign with ' +
      "the payer's own address credentials",
  );
  const addressOnly =
    kinds.length > 0 && kinds.every((k) => k === 'sorobanCredentialsAddress' || k === 'sorobanCredentialsAddressV2');
  ensure(
    RULES.addressCredentials,
    addressOnly,
    'Every auth entry must have address credentials (sorobanCredentialsAddress or sorobanCredentialsAddressV2)',
  );
  const entries = d.authEntries.filter((e) => credentialAddress(e) === from);
  ensure(
    RULES.signedByFrom,
    entries.length === 1 && d.authEntries.length === 1,
    "The transaction must carry exactly one auth entry, signed by the transfer's `from`",
  );
  const entry = entries[0];
  const root = entry.rootInvocation();
  ensure(
    RULES.noSubInvocations,
    root.subInvocations().length === 0,
    'The authorization must not carry sub-invocations',
  );
  const fn = root.function();
  const same =
    fn.switch().name === 'sorobanAuthorizedFunctionTypeContractFn' &&
    fn.contractFn().toXDR('base64') === call.toXDR('base64');
  ensure(RULES.signedByFrom, same, 'The auth entry authorizes another call than the transaction invokes');
  return entry;
}

/** Facilitator safety: none of our addresses is a source, the payer, or named in an auth entry. */
export function checkFacilitatorSafety(d: DecodedPayment, from: string, ours: ReadonlySet<string>): void {
  ensure(RULES.txSource, !d.txSource || !ours.has(d.txSource), 'The transaction source is a facilitator account');
  ensure(RULES.opSource, !d.opSource || !ours.has(d.opSource), 'The operation source is a facilitator account');
  ensure(RULES.fromNotFacilitator, !ours.has(from), 'The facilitator cannot be the payer');
  for (const e of d.authEntries) {
    const named = credentialAddress(e);
    ensure(
      RULES.facilitatorNotInAuth,
      named === null || !ours.has(named),
      'A facilitator account appears in an auth entry',
    );
  }
}

export function checkDeclaredTerms(
  declared: DeclaredTerms | undefined,
  t: { from: string; to: string; amount: Stroops; contractId: AssetContractId; expiration: number },
): void {
  if (!declared) return;
  const same =
    declared.amount === t.amount &&
    declared.payTo === t.to &&
    (declared.assetContractId === null || declared.assetContractId === t.contractId) &&
    (declared.expiresAtLedger === undefined || declared.expiresAtLedger === t.expiration) &&
    (declared.payer === undefined || declared.payer === t.from);
  ensure(
    RULES.declaredTerms,
    same,
    "The payload's declared terms (amount, payTo, asset, payer, expiresAtLedger) differ from the signed authorization",
  );
}

export function checkAccountability(from: string, to: string, amount: Stroops, minimumStroops: Stroops): void {
  ensure(RULES.notSelfPayment, from !== to, 'The payer and payTo are the same address');
  ensure(
    RULES.minimumAmount,
    amount >= minimumStroops,
    `The amount is below the facilitator's minimum of ${minimumStroops} stroops`,
  );
}

/**
 * Every signature the entry carries verifies over its authorization payload (an account's signature vector: maps
 * {public_key: bytes(32), signature: bytes(64)}, sorted by key, at most 20). Which of those keys are signers and
 * whether their weights reach the threshold is the ledger's to say (simulation). A contract (C...) payer's
 * signature format is its own: only the simulation can judge it.
 */
export function checkSignatures(entry: xdr.SorobanAuthorizationEntry, payer: string, passphrase: string): void {
  if (!payer.startsWith('G')) return;
  const sig = addressCredentialsOf(entry.credentials())!.signature();
  const items = sig.switch().name === 'scvVec' ? (sig.vec() ?? []) : [];
  ensure(RULES.signatures, items.length >= 1 && items.length <= 20, 'The authorization carries no account signature');
  const payload = authorizationPayload(entry, passphrase);
  for (const item of items) {
    const pair = signaturePair(item);
    const ok = pair !== null && crypto.verify(null, payload, ed25519Key(pair.publicKey), pair.signature);
    if (!ok)
      throw refuse(RULES.signatures, 'An authorization signature does not verify over the authorization payload');
  }
}

function signaturePair(item: xdr.ScVal): { publicKey: Buffer; signature: Buffer } | null {
  if (item.switch().name !== 'scvMap') return null;
  let publicKey: Buffer | null = null;
  let signature: Buffer | null = null;
  for (const e of item.map() ?? []) {
    if (e.key().switch().name !== 'scvSymbol' || e.val().switch().name !== 'scvBytes') return null;
    const k = e.key().sym().toString();
    if (k === 'public_key') publicKey = e.val().bytes();
    else if (k === 'signature') signature = e.val().bytes();
    else return null;
  }
  if (!publicKey || !signature || publicKey.length !== 32 || signature.length !== 64) return null;
  return { publicKey, signature };
}

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const keys = new Map<string, crypto.KeyObject>();
/** KeyObjects of raw ed25519 public keys, kept (LRU of 10,000): making one was 3 % of a verify. */
function ed25519Key(raw: Buffer): crypto.KeyObject {
  const id = raw.toString('base64');
  let key = keys.get(id);
  if (key) keys.delete(id);
  else {
    key = crypto.createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
    if (keys.size >= 10_000) keys.delete(keys.keys().next().value as string);
  }
  keys.set(id, key);
  return key;
}

/** Runs every offline rule in order; the checked payment, or the first rule's refusal. */
export function checkOffline(input: OfflineInput, policy: OfflinePolicy): CheckedPayment {
  checkProtocol(input);
  const decoded = input.decoded ?? decodePayment(input.authorization.format, input.authorization.xdr);
  const { call, from, to, amount } = checkStructure(decoded, input.required);
  const entry = checkAuthEntries(decoded, call, from);
  checkFacilitatorSafety(decoded, from, policy.facilitatorAddresses);
  const ac = addressCredentialsOf(entry.credentials())!;
  const expiration = ac.signatureExpirationLedger();
  checkDeclaredTerms(input.declared, { from, to, amount, contractId: input.required.asset.contractId, expiration });
  checkAccountability(from, to, amount, policy.minimumStroops);
  checkSignatures(entry, from, input.required.passphrase);
  return {
    decoded,
    hostFunction: decoded.hostFunction!,
    entry,
    credentials: credentialKind(entry.credentials()) as CheckedPayment['credentials'],
    entryXdr: entry.toXDR('base64'),
    payer: from,
    to,
    amount,
    contractId: input.required.asset.contractId,
    nonce: ac.nonce().toString(),
    signatureExpirationLedger: expiration,
  };
}
