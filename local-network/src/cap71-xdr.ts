/**
 * GENERATED FILE: DO NOT EDIT. Source: server/src/domain/facilitator/cap71-xdr.ts, copied by scripts/generate.mjs.
 * Change the source and run `npm run generate` (`npm run check:generated` fails when this copy differs).
 */
/// <reference path="./js-xdr.d.ts" />
import { config } from '@stellar/js-xdr';
import { xdr } from '@stellar/stellar-sdk';

/**
 * CAP-71 (protocol 27) Soroban credentials on @stellar/stellar-sdk 14 and Node 20.
 *
 * stellar-sdk 17 carries these XDR types but requires Node >= 22.12; the 14.x line (and @stellar/stellar-base up to
 * 15.0.0) does not know them, so an envelope carrying them does not even decode. This module adds them to the one
 * XDR type set the SDK uses (`xdr` of @stellar/stellar-base, built with @stellar/js-xdr's `config`), once, when it is
 * first imported, in the same process for every reader (the facilitator's decoder, the ledger adapter, the local
 * network). What it adds, as the protocol's Stellar-transaction.x defines it:
 *
 *   enum SorobanCredentialsType { ..., SOROBAN_CREDENTIALS_ADDRESS_V2 = 2, SOROBAN_CREDENTIALS_ADDRESS_WITH_DELEGATES =
 * 3 };
 *   union SorobanCredentials { ...; case ADDRESS_V2: SorobanAddressCredentials addressV2;
 *                              case ADDRESS_WITH_DELEGATES: SorobanAddressCredentialsWithDelegates
 * addressWithDelegates; };
 *   struct SorobanDelegateSignature { SCAddress address; SCVal signature; SorobanDelegateSignature nestedDelegates<>;
 * };
 *   struct SorobanAddressCredentialsWithDelegates { SorobanAddressCredentials addressCredentials;
 * SorobanDelegateSignature delegates<>; };
 *   enum EnvelopeType { ..., ENVELOPE_TYPE_SOROBAN_AUTHORIZATION_WITH_ADDRESS = 10 };
 *   union HashIdPreimage { ...; case ENVELOPE_TYPE_SOROBAN_AUTHORIZATION_WITH_ADDRESS:
 *     struct { Hash networkId; int64 nonce; uint32 signatureExpirationLedger; SCAddress address;
 *              SorobanAuthorizedInvocation invocation; } sorobanAuthorizationWithAddress; };
 *
 * V2 address credentials have the V1 body; what differs is what their signature signs: the preimage names the
 * address, so a signature made for one address never authorizes another one sharing the key (CAP-71-02).
 * When the installed stellar-base already has an arm (a later upgrade), nothing is added.
 */

/* The js-xdr classes behind the SDK's types, as far as this module touches them. */
interface XdrEnumClass {
  _members: Record<string, unknown>;
  _byValue: Record<number, unknown>;
  new (name: string, value: number): unknown;
  [factory: string]: unknown;
}
interface XdrUnionClass {
  _switchOn: { fromName(name: string): unknown };
  _switches: Map<unknown, string>;
  _arms: Record<string, unknown>;
  prototype: Record<string, unknown>;
  new (aSwitch: unknown, value: unknown): { set(aSwitch: unknown, value: unknown): unknown; get(arm: string): unknown };
  [factory: string]: unknown;
}

const types = xdr as unknown as Record<string, unknown>;
const UNBOUNDED = 2147483647;

function addEnumMember(Enum: XdrEnumClass, name: string, value: number): void {
  if (Enum._members[name]) return;
  const member = new Enum(name, value);
  Enum._members[name] = member;
  Enum._byValue[value] = member;
  Enum[name] = () => member;
}

function addUnionArm(Union: XdrUnionClass, switchName: string, arm: string, armType: unknown): void {
  const key = Union._switchOn.fromName(switchName);
  if (Union._switches.has(key)) return;
  Union._switches.set(key, arm);
  Union._arms[arm] = armType;
  Union[switchName] = (value: unknown) => new Union(key, value);
  Union.prototype[switchName] = function set(this: { set(s: unknown, v: unknown): unknown }, value: unknown) {
    return this.set(key, value);
  };
  Union.prototype[arm] = function get(this: { get(a: string): unknown }) {
    return this.get(arm);
  };
}

function extend(): void {
  config((b) => {
    if (!types.SorobanDelegateSignature) {
      b.struct('SorobanDelegateSignature', [
        ['address', types.ScAddress],
        ['signature', types.ScVal],
        ['nestedDelegates', b.varArray(b.lookup('SorobanDelegateSignature'), UNBOUNDED)],
      ]);
      b.struct('SorobanAddressCredentialsWithDelegates', [
        ['addressCredentials', types.SorobanAddressCredentials],
        ['delegates', b.varArray(b.lookup('SorobanDelegateSignature'), UNBOUNDED)],
      ]);
    }
    if (!types.HashIdPreimageSorobanAuthorizationWithAddress) {
      b.struct('HashIdPreimageSorobanAuthorizationWithAddress', [
        ['networkId', types.Hash],
        ['nonce', types.Int64],
        ['signatureExpirationLedger', types.Uint32],
        ['address', types.ScAddress],
        ['invocation', types.SorobanAuthorizedInvocation],
      ]);
    }
  }, types);
  const credentialsType = types.SorobanCredentialsType as XdrEnumClass;
  addEnumMember(credentialsType, 'sorobanCredentialsAddressV2', 2);
  addEnumMember(credentialsType, 'sorobanCredentialsAddressWithDelegates', 3);
  const credentials = types.SorobanCredentials as XdrUnionClass;
  addUnionArm(credentials, 'sorobanCredentialsAddressV2', 'addressV2', types.SorobanAddressCredentials);
  addUnionArm(
    credentials,
    'sorobanCredentialsAddressWithDelegates',
    'addressWithDelegates',
    types.SorobanAddressCredentialsWithDelegates,
  );
  addEnumMember(types.EnvelopeType as XdrEnumClass, 'envelopeTypeSorobanAuthorizationWithAddress', 10);
  addUnionArm(
    types.HashIdPreimage as XdrUnionClass,
    'envelopeTypeSorobanAuthorizationWithAddress',
    'sorobanAuthorizationWithAddress',
    types.HashIdPreimageSorobanAuthorizationWithAddress,
  );
}

extend();

/** The credential kinds of a SorobanAuthorizationEntry (CAP-71 included). */
export type CredentialKind =
  | 'sorobanCredentialsSourceAccount'
  | 'sorobanCredentialsAddress'
  | 'sorobanCredentialsAddressV2'
  | 'sorobanCredentialsAddressWithDelegates';

export function credentialKind(creds: xdr.SorobanCredentials): CredentialKind {
  return creds.switch().name as CredentialKind;
}

/** The address-credential body of V1 and V2 credentials (the same struct); null for source-account and delegated ones.
 * */
export function addressCredentialsOf(creds: xdr.SorobanCredentials): xdr.SorobanAddressCredentials | null {
  const kind = credentialKind(creds);
  if (kind === 'sorobanCredentialsAddress') return creds.address();
  if (kind === 'sorobanCredentialsAddressV2')
    return (creds as unknown as { addressV2(): xdr.SorobanAddressCredentials }).addressV2();
  return null;
}

/** V1 (`sorobanCredentialsAddress`) or V2 (`sorobanCredentialsAddressV2`) credentials around the same body. */
export function addressCredentials(version: 1 | 2, body: xdr.SorobanAddressCredentials): xdr.SorobanCredentials {
  if (version === 1) return xdr.SorobanCredentials.sorobanCredentialsAddress(body);
  const factory = (
    xdr.SorobanCredentials as unknown as Record<string, (b: xdr.SorobanAddressCredentials) => xdr.SorobanCredentials>
  ).sorobanCredentialsAddressV2;
  return factory(body);
}

/** Delegated credentials (CAP-71-01) around a V1 body, with no delegates: what a wallet using them sends. */
export function delegatedCredentials(body: xdr.SorobanAddressCredentials): xdr.SorobanCredentials {
  const WithDelegates = types.SorobanAddressCredentialsWithDelegates as new (a: {
    addressCredentials: xdr.SorobanAddressCredentials;
    delegates: unknown[];
  }) => unknown;
  const factory = (xdr.SorobanCredentials as unknown as Record<string, (b: unknown) => xdr.SorobanCredentials>)
    .sorobanCredentialsAddressWithDelegates;
  return factory(new WithDelegates({ addressCredentials: body, delegates: [] }));
}

/**
 * The HashIdPreimage an address credential's signature signs: V1 `envelopeTypeSorobanAuthorization` {networkId,
 * nonce, signatureExpirationLedger, invocation}; V2 `envelopeTypeSorobanAuthorizationWithAddress`, the same with the
 * credential's address before the invocation.
 */
export function authorizationPreimage(
  version: 1 | 2,
  networkId: Buffer,
  body: Pick<xdr.SorobanAddressCredentials, 'nonce' | 'signatureExpirationLedger' | 'address'>,
  invocation: xdr.SorobanAuthorizedInvocation,
): xdr.HashIdPreimage {
  const common = {
    networkId,
    nonce: body.nonce(),
    signatureExpirationLedger: body.signatureExpirationLedger(),
    invocation,
  };
  if (version === 1)
    return xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(new xdr.HashIdPreimageSorobanAuthorization(common));
  const WithAddress = types.HashIdPreimageSorobanAuthorizationWithAddress as new (a: unknown) => unknown;
  const factory = (xdr.HashIdPreimage as unknown as Record<string, (v: unknown) => xdr.HashIdPreimage>)
    .envelopeTypeSorobanAuthorizationWithAddress;
  return factory(new WithAddress({ ...common, address: body.address() }));
}

/** 1 for V1 address credentials, 2 for V2, null for the others. */
export function addressCredentialVersion(creds: xdr.SorobanCredentials): 1 | 2 | null {
  const kind = credentialKind(creds);
  return kind === 'sorobanCredentialsAddress' ? 1 : kind === 'sorobanCredentialsAddressV2' ? 2 : null;
}
