/**
 * Pure unit tests of the facilitator's rules (issue #34 item 8): a payload in, a rule id out, milliseconds each. No
 * database, no ledger, no HTTP: each payload is built in memory as real XDR signed with real ed25519 keys
 * (@stellar/stellar-sdk), and handed to the rule functions of rules/offline.ts, rules/simulation.ts,
 * catalog-terms.ts and check-payment.ts (resolveRequired). Each refusal asserts the DomainError's code and its
 * `details[0].code`, the rule id. The HTTP-level refusals of the same rules are in exact-rules.test.ts.
 *
 * The rules that need the database or the ledger's state (fee budgets, the payer's turn, the payTo's seller, the
 * seller's key) are listed in COVERED_ELSEWHERE with the HTTP-level test file that refuses them; a last test checks
 * that every rule of RULES is either here or there, so a new rule without a test fails this file.
 *
 * (Jest's global setup still starts the run's one PostgreSQL; nothing in this file connects to it.)
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  Account,
  Asset,
  Keypair,
  Networks,
  Operation,
  StrKey,
  TransactionBuilder,
  authorizeInvocation,
  nativeToScVal,
  xdr,
} from '@stellar/stellar-sdk';
import { DomainError } from '../../src/domain/errors';
import { stroops, toStroops } from '../../src/domain/amount';
import { assetContractId, type AssetContractId } from '../../src/domain/network-registry';
import { RULES, type RuleName } from '../../src/domain/facilitator/rules/catalog';
import { decodePayment } from '../../src/domain/facilitator/rules/decode';
import {
  checkAccountability,
  checkAuthEntries,
  checkDeclaredTerms,
  checkFacilitatorSafety,
  checkOffline,
  checkProtocol,
  checkSignatures,
  checkStructure,
  type OfflineInput,
  type OfflinePolicy,
  type RequiredTerms,
} from '../../src/domain/facilitator/rules/offline';
import {
  checkExactBalanceChanges,
  checkExpiry,
  checkSimulationSucceeded,
  simulationErrorCode,
  type SimulationOutcome,
} from '../../src/domain/facilitator/rules/simulation';
import { checkCatalogTerms } from '../../src/domain/facilitator/catalog-terms';
import { checkPaymentFlow } from '../../src/domain/facilitator/rules/flows';
import {
  resolveAsset,
  resolveRequired,
  type NetworkLookup,
  type PaymentRequirementsInput,
} from '../../src/domain/facilitator/check-payment';
import type { ResourceTermsRef } from '../../src/domain/facilitator/types';
import { addressCredentials, addressCredentialsOf, credentialKind } from '../../src/domain/facilitator/cap71-xdr';
import { accountSignature, asDelegated, payloadFor, signAccountEntry, withCredentials } from '../support/cap71';

/** Rules enforced only with the database or the ledger's state, and the HTTP-level test file that refuses each. */
const COVERED_ELSEWHERE: Partial<Record<RuleName, string>> = {
  payeeIsSeller: 'server/test/facilitator/attacks.test.ts',
  sellerAsked: 'server/test/facilitator/attacks.test.ts',
  sellerKeyMatches: 'server/test/facilitator/attacks.test.ts',
  feeBudget: 'server/test/facilitator/strangers.test.ts',
  payerTurn: 'server/test/facilitator/strangers.test.ts',
};

const NETWORK = 'stellar:testnet';
const PASSPHRASE = Networks.TESTNET;
const ISSUER = Keypair.random().publicKey();
const USDC = { code: 'USDC', issuer: ISSUER, contractId: assetContractId('USDC', ISSUER, PASSPHRASE) };
const XLM_CONTRACT = Asset.native().contractId(PASSPHRASE) as AssetContractId;
const AMOUNT = stroops(5_000_000n); // 0.5 USDC
const LATEST = 1_000;
const EXPIRATION = LATEST + 50;
const buyer = Keypair.random();
const payTo = Keypair.random().publicKey();
const channel = Keypair.random();

const required: RequiredTerms = {
  scheme: 'exact',
  network: NETWORK,
  passphrase: PASSPHRASE,
  amount: AMOUNT,
  payTo,
  asset: USDC,
};
const policy: OfflinePolicy = { facilitatorAddresses: new Set([channel.publicKey()]), minimumStroops: stroops(1_000n) };

const address = (g: string) => nativeToScVal(g, { type: 'address' });

interface CallOptions {
  contractId?: string;
  fn?: string;
  args?: xdr.ScVal[];
  from?: string;
  to?: string;
  amount?: bigint;
}
function transferCall(o: CallOptions = {}): xdr.InvokeContractArgs {
  return new xdr.InvokeContractArgs({
    contractAddress: address(o.contractId ?? USDC.contractId).address(),
    functionName: o.fn ?? 'transfer',
    args: o.args ?? [
      address(o.from ?? buyer.publicKey()),
      address(o.to ?? payTo),
      nativeToScVal(o.amount ?? AMOUNT, { type: 'i128' }),
    ],
  });
}

interface SignOptions extends CallOptions {
  signer?: Keypair;
  passphrase?: string;
  subInvocations?: xdr.SorobanAuthorizedInvocation[];
}
/** The payer's auth entry for a call, signed with real ed25519 (what a buyer's wallet produces). */
function signedEntry(o: SignOptions = {}): Promise<xdr.SorobanAuthorizationEntry> {
  const invocation = new xdr.SorobanAuthorizedInvocation({
    function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(transferCall(o)),
    subInvocations: o.subInvocations ?? [],
  });
  const signer = o.signer ?? buyer;
  return authorizeInvocation(signer, EXPIRATION, invocation, o.from ?? signer.publicKey(), o.passphrase ?? PASSPHRASE);
}

interface TxOptions {
  source?: string;
  opSource?: string;
  auth?: xdr.SorobanAuthorizationEntry[];
  func?: xdr.HostFunction;
  extraOps?: xdr.Operation[];
}
/** The x402 `payload.transaction` form: a transaction envelope with one invokeHostFunction carrying the entry. */
function transactionXdr(entry: xdr.SorobanAuthorizationEntry, o: TxOptions = {}): string {
  const b = new TransactionBuilder(new Account(o.source ?? buyer.publicKey(), '1'), {
    fee: '100',
    networkPassphrase: PASSPHRASE,
  }).setTimeout(60);
  b.addOperation(
    Operation.invokeHostFunction({
      func: o.func ?? xdr.HostFunction.hostFunctionTypeInvokeContract(entry.rootInvocation().function().contractFn()),
      auth: o.auth ?? [entry],
      ...(o.opSource ? { source: o.opSource } : {}),
    }),
  );
  for (const op of o.extraOps ?? []) b.addOperation(op);
  return b.build().toXDR();
}

/** An OfflineInput for an entry (the /v1 `sorobanAuthorizationEntry` form unless `transaction` XDR is given). */
function input(
  entry: xdr.SorobanAuthorizationEntry,
  o: Partial<OfflineInput> & { transaction?: string } = {},
): OfflineInput {
  const { transaction, ...rest } = o;
  return {
    scheme: 'exact',
    network: NETWORK,
    required,
    declared: {
      amount: AMOUNT,
      payTo,
      assetContractId: USDC.contractId,
      expiresAtLedger: EXPIRATION,
      payer: buyer.publicKey(),
    },
    authorization: transaction
      ? { format: 'transaction', xdr: transaction }
      : { format: 'sorobanAuthorizationEntry', xdr: entry.toXDR('base64') },
    ...rest,
  };
}

const networks: NetworkLookup = {
  get: (n) => (n === NETWORK ? { network: NETWORK, passphrase: PASSPHRASE, assets: [USDC] } : undefined),
  asset: (n, code, issuer) => (n === NETWORK && code === USDC.code && issuer === USDC.issuer ? USDC : undefined),
};
const requirements: PaymentRequirementsInput = {
  scheme: 'exact',
  network: NETWORK,
  amount: toStroops('0.5'),
  payTo,
  asset: USDC,
};
const resource: ResourceTermsRef = {
  id: 'r1',
  sellerId: 's1',
  versionId: 'v1',
  network: NETWORK,
  payTo,
  assetCode: USDC.code,
  assetIssuer: USDC.issuer,
  amount: toStroops('0.5'),
};

/** A SEP-41 transfer event as the simulation reports it. */
function transferEvent(from: string, to: string, amount: bigint, contractId = USDC.contractId): xdr.DiagnosticEvent {
  return new xdr.DiagnosticEvent({
    inSuccessfulContractCall: true,
    event: new xdr.ContractEvent({
      ext: new xdr.ExtensionPoint(0),
      contractId: StrKey.decodeContract(contractId) as unknown as xdr.Hash,
      type: xdr.ContractEventType.contract(),
      body: new xdr.ContractEventBody(
        0,
        new xdr.ContractEventV0({
          topics: [xdr.ScVal.scvSymbol('transfer'), address(from), address(to)],
          data: nativeToScVal(amount, { type: 'i128' }),
        }),
      ),
    }),
  });
}
const simulation = (o: Partial<SimulationOutcome> = {}): SimulationOutcome => ({
  latestLedger: LATEST,
  error: null,
  events: [transferEvent(buyer.publicKey(), payTo, AMOUNT)],
  minResourceFee: 0n,
  ...o,
});
const expected = { payer: buyer.publicKey(), payTo, amount: AMOUNT, contractId: USDC.contractId };

/** Runs `run` and expects the rule's refusal: its error code, and its id in details[0].code. */
async function expectRefusedBy(run: () => unknown, rule: RuleName): Promise<void> {
  let thrown: unknown = null;
  try {
    await run();
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(DomainError);
  const err = thrown as DomainError;
  expect({ code: err.code, rule: err.details?.[0]?.code }).toEqual({ code: RULES[rule].code, rule: RULES[rule].id });
}

let valid: xdr.SorobanAuthorizationEntry;
beforeAll(async () => {
  valid = await signedEntry();
});

/** One refusal per rule enforced by a pure function: [rule, the payload that breaks it, the call]. */
const REFUSALS: Array<[RuleName, string, () => unknown]> = [
  // 1. Protocol
  ['x402Version', 'a payload that says x402Version 1', () => checkProtocol(input(valid, { x402Version: 1 }))],
  ['schemeExact', 'a payload in the "upto" scheme', () => checkProtocol(input(valid, { scheme: 'upto' }))],
  [
    'networkSupported',
    'requirements on stellar:futurenet',
    () => resolveRequired(networks, { ...requirements, network: 'stellar:futurenet' }),
  ],
  [
    'networkMatches',
    'a testnet payload for pubnet requirements',
    () => checkProtocol(input(valid, { network: 'stellar:pubnet' })),
  ],
  [
    'assetSupported',
    'requirements in an asset that is not configured',
    () => resolveRequired(networks, { ...requirements, asset: resolveAsset(networks, NETWORK, 'EURC', ISSUER) }),
  ],
  [
    'paymentFlowSupported',
    'requirements asking for the escrow flow',
    () => checkPaymentFlow({ paymentFlow: 'escrow' }, { paymentFlow: 'escrow' }),
  ],
  [
    'paymentFlowSupported',
    'requirements naming a flow x402 does not define',
    () => checkPaymentFlow({ paymentFlow: 'instant' }, { paymentFlow: 'instant' }),
  ],
  [
    'paymentFlowSupported',
    'a payload that accepted the upfront flow for authorization requirements',
    () => checkPaymentFlow({}, { paymentFlow: 'upfront' }),
  ],
  // 2. Structure
  [
    'decodable',
    'bytes that are not a transaction envelope',
    () => checkOffline(input(valid, { transaction: 'AAAAAQ==' }), policy),
  ],
  [
    'plainTransaction',
    'a fee-bump envelope',
    () => {
      const inner = TransactionBuilder.fromXDR(transactionXdr(valid), PASSPHRASE);
      const bump = TransactionBuilder.buildFeeBumpTransaction(buyer.publicKey(), '200', inner as never, PASSPHRASE);
      return checkOffline(input(valid, { transaction: bump.toXDR() }), policy);
    },
  ],
  [
    'singleInvoke',
    'a second operation (a payment out of the payer)',
    () =>
      checkOffline(
        input(valid, {
          transaction: transactionXdr(valid, {
            extraOps: [Operation.payment({ destination: payTo, asset: Asset.native(), amount: '1' })],
          }),
        }),
        policy,
      ),
  ],
  [
    'invokeContract',
    'a host function that uploads code instead of calling a contract',
    () =>
      checkOffline(
        input(valid, {
          transaction: transactionXdr(valid, {
            func: xdr.HostFunction.hostFunctionTypeUploadContractWasm(Buffer.from('00', 'hex')),
          }),
        }),
        policy,
      ),
  ],
  [
    'contractIsAsset',
    'a transfer on the XLM contract for USDC requirements',
    async () => checkOffline(input(await signedEntry({ contractId: XLM_CONTRACT })), policy),
  ],
  [
    'transferCall',
    'a call to `burn` on the asset contract',
    async () => checkOffline(input(await signedEntry({ fn: 'burn' })), policy),
  ],
  [
    'transferCall',
    'a transfer with two arguments',
    async () => checkOffline(input(await signedEntry({ args: [address(buyer.publicKey()), address(payTo)] })), policy),
  ],
  [
    'recipient',
    'a transfer to another address than payTo',
    async () => checkOffline(input(await signedEntry({ to: Keypair.random().publicKey() })), policy),
  ],
  [
    'amount',
    'a transfer of 1 stroop less than required',
    async () => checkOffline(input(await signedEntry({ amount: AMOUNT - 1n })), policy),
  ],
  [
    'declaredTerms',
    'a /v1 payload declaring a larger amount than it signed',
    () =>
      checkOffline(
        input(valid, {
          declared: {
            amount: stroops(AMOUNT * 2n),
            payTo,
            assetContractId: USDC.contractId,
            expiresAtLedger: EXPIRATION,
          },
        }),
        policy,
      ),
  ],
  [
    'declaredTerms',
    'a /v1 payload declaring another expiry than it signed',
    () =>
      checkDeclaredTerms(
        { amount: AMOUNT, payTo, assetContractId: null, expiresAtLedger: EXPIRATION + 1 },
        { from: buyer.publicKey(), to: payTo, amount: AMOUNT, contractId: USDC.contractId, expiration: EXPIRATION },
      ),
  ],
  // 3. Auth entries
  [
    'addressCredentials',
    'an auth entry with source-account credentials',
    () => {
      const sourceCreds = new xdr.SorobanAuthorizationEntry({
        credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
        rootInvocation: valid.rootInvocation(),
      });
      return checkOffline(input(valid, { transaction: transactionXdr(valid, { auth: [sourceCreds] }) }), policy);
    },
  ],
  [
    'addressCredentials',
    'a transaction carrying no auth entry',
    () => checkOffline(input(valid, { transaction: transactionXdr(valid, { auth: [] }) }), policy),
  ],
  [
    'signedByFrom',
    'a transaction whose auth entry is signed by another address than `from`',
    async () =>
      checkOffline(
        input(valid, {
          transaction: transactionXdr(valid, { auth: [await signedEntry({ signer: Keypair.random() })] }),
        }),
        policy,
      ),
  ],
  [
    'signedByFrom',
    "a second auth entry beside the payer's",
    async () =>
      checkOffline(
        input(valid, {
          transaction: transactionXdr(valid, { auth: [valid, await signedEntry({ signer: Keypair.random() })] }),
        }),
        policy,
      ),
  ],
  [
    'signedByFrom',
    'an auth entry authorizing another amount than the transaction invokes',
    async () =>
      checkOffline(
        input(valid, {
          transaction: transactionXdr(await signedEntry({ amount: 1n }), {
            func: xdr.HostFunction.hostFunctionTypeInvokeContract(transferCall()),
          }),
        }),
        policy,
      ),
  ],
  [
    'noSubInvocations',
    'an authorization with a sub-invocation',
    async () => {
      const sub = new xdr.SorobanAuthorizedInvocation({
        function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
          transferCall({ to: Keypair.random().publicKey() }),
        ),
        subInvocations: [],
      });
      return checkOffline(input(await signedEntry({ subInvocations: [sub] })), policy);
    },
  ],
  [
    'noDelegatedCredentials',
    "the payer's signed body wrapped in CAP-71 delegated credentials (sorobanCredentialsAddressWithDelegates)",
    () => checkOffline(input(asDelegated(valid)), policy),
  ],
  [
    'noDelegatedCredentials',
    'a transaction whose auth entry carries delegated credentials',
    () => checkOffline(input(valid, { transaction: transactionXdr(valid, { auth: [asDelegated(valid)] }) }), policy),
  ],
  [
    'addressCredentials',
    'a V2 payer entry beside an entry with source-account credentials',
    () => {
      const sourceCreds = new xdr.SorobanAuthorizationEntry({
        credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
        rootInvocation: valid.rootInvocation(),
      });
      return checkOffline(
        input(valid, {
          transaction: transactionXdr(valid, {
            auth: [signAccountEntry(valid, 2, [buyer], EXPIRATION, PASSPHRASE), sourceCreds],
          }),
        }),
        policy,
      );
    },
  ],
  // CAP-71 attacks: the credential arm decides the preimage, so a signature never moves between arms or addresses.
  [
    'signatures',
    'credential arm swap: a V1 signature relabelled as V2 credentials',
    () =>
      checkOffline(
        input(withCredentials(valid, 2, EXPIRATION, addressCredentialsOf(valid.credentials())!.signature())),
        policy,
      ),
  ],
  [
    'signatures',
    'credential arm swap: a V2 signature relabelled as V1 credentials',
    () =>
      checkOffline(
        input(
          withCredentials(
            signAccountEntry(valid, 2, [buyer], EXPIRATION, PASSPHRASE),
            1,
            EXPIRATION,
            addressCredentialsOf(
              signAccountEntry(valid, 2, [buyer], EXPIRATION, PASSPHRASE).credentials(),
            )!.signature(),
          ),
        ),
        policy,
      ),
  ],
  [
    'signatures',
    "cross-address replay: a V2 signature the payer's key made for another address it signs for",
    () => {
      const other = Keypair.random().publicKey();
      const unsigned = withCredentials(valid, 2, EXPIRATION, xdr.ScVal.scvVoid());
      return checkOffline(
        input(
          withCredentials(
            unsigned,
            2,
            EXPIRATION,
            accountSignature([buyer], payloadFor(2, unsigned, EXPIRATION, PASSPHRASE, other)),
          ),
        ),
        policy,
      );
    },
  ],
  [
    'signatures',
    'an authorization signed for another network (mainnet passphrase)',
    async () => checkOffline(input(await signedEntry({ passphrase: Networks.PUBLIC })), policy),
  ],
  [
    'signatures',
    'an authorization whose signature has one bit flipped',
    async () => {
      const entry = xdr.SorobanAuthorizationEntry.fromXDR(valid.toXDR());
      const sig = entry
        .credentials()
        .address()
        .signature()
        .vec()![0]
        .map()!
        .find((e) => e.key().sym().toString() === 'signature')!
        .val()
        .bytes();
      sig[0] ^= 1;
      return checkOffline(input(entry), policy);
    },
  ],
  [
    'signatures',
    'an authorization carrying no signature',
    () => {
      const entry = xdr.SorobanAuthorizationEntry.fromXDR(valid.toXDR());
      entry.credentials().address().signature(xdr.ScVal.scvVec([]));
      return checkSignatures(entry, buyer.publicKey(), PASSPHRASE);
    },
  ],
  ['notExpired', 'an authorization that expires at the latest ledger', () => checkExpiry(LATEST, LATEST, 300, 5)],
  [
    'expiryWindow',
    'an authorization valid 1000 ledgers ahead when 300 s allow 62',
    () => checkExpiry(LATEST + 1_000, LATEST, 300, 5),
  ],
  // 4. Facilitator safety
  [
    'txSource',
    'a transaction whose source is a facilitator channel',
    () => checkOffline(input(valid, { transaction: transactionXdr(valid, { source: channel.publicKey() }) }), policy),
  ],
  [
    'opSource',
    'an operation whose source is a facilitator channel',
    () => checkOffline(input(valid, { transaction: transactionXdr(valid, { opSource: channel.publicKey() }) }), policy),
  ],
  [
    'fromNotFacilitator',
    'a transfer out of a facilitator account',
    () => checkOffline(input(valid), { ...policy, facilitatorAddresses: new Set([buyer.publicKey()]) }),
  ],
  [
    // Defence in depth: checkAuthEntries already allows only the payer's entry, so this is judged on the decoded
    // payment.
    'facilitatorNotInAuth',
    'a facilitator channel named in a second auth entry',
    async () => {
      const decoded = decodePayment(
        'transaction',
        transactionXdr(valid, { auth: [valid, await signedEntry({ signer: channel })] }),
      );
      return checkFacilitatorSafety(decoded, buyer.publicKey(), policy.facilitatorAddresses);
    },
  ],
  // 5. Simulation
  [
    'simulationSucceeds',
    'a simulation the host refuses',
    () => checkSimulationSucceeded(simulation({ error: 'HostError: Error(WasmVm, InvalidAction)', events: [] })),
  ],
  [
    'exactBalanceChanges',
    'a simulation showing a second transfer',
    () =>
      checkExactBalanceChanges(
        simulation({
          events: [
            transferEvent(buyer.publicKey(), payTo, AMOUNT),
            transferEvent(buyer.publicKey(), channel.publicKey(), 1n),
          ],
        }),
        expected,
      ),
  ],
  [
    'exactBalanceChanges',
    'a simulation showing another amount',
    () =>
      checkExactBalanceChanges(
        simulation({ events: [transferEvent(buyer.publicKey(), payTo, AMOUNT + 1n)] }),
        expected,
      ),
  ],
  [
    'exactBalanceChanges',
    'a simulation showing the transfer on another asset',
    () =>
      checkExactBalanceChanges(
        simulation({ events: [transferEvent(buyer.publicKey(), payTo, AMOUNT, XLM_CONTRACT)] }),
        expected,
      ),
  ],
  [
    'exactBalanceChanges',
    'a simulation showing no transfer',
    () => checkExactBalanceChanges(simulation({ events: [] }), expected),
  ],
  // Accountability
  [
    'notSelfPayment',
    'a payer paying itself',
    async () =>
      checkOffline(
        input(await signedEntry({ to: buyer.publicKey() }), {
          required: { ...required, payTo: buyer.publicKey() },
          declared: undefined,
        }),
        policy,
      ),
  ],
  [
    'minimumAmount',
    "an amount below the facilitator's minimum",
    () => checkOffline(input(valid), { ...policy, minimumStroops: stroops(AMOUNT + 1n) }),
  ],
  [
    'minimumAmount',
    'a 1-stroop amount against the default 0.0001 minimum',
    () => checkAccountability(buyer.publicKey(), payTo, stroops(1n), stroops(1_000n)),
  ],
  // Catalog terms
  [
    'catalogNetwork',
    'requirements on another network than the resource is listed on',
    () => checkCatalogTerms(resource, { ...requirements, network: 'stellar:pubnet' }),
  ],
  [
    'catalogAmount',
    "requirements for less than the resource's price",
    () => checkCatalogTerms(resource, { ...requirements, amount: toStroops('0.4999999') }),
  ],
  [
    'catalogPayTo',
    'requirements paying another payTo than the listed one',
    () => checkCatalogTerms(resource, { ...requirements, payTo: Keypair.random().publicKey() }),
  ],
  [
    'catalogAsset',
    'requirements in another asset than the listed one',
    () => checkCatalogTerms(resource, { ...requirements, asset: { ...USDC, issuer: Keypair.random().publicKey() } }),
  ],
];

describe('each facilitator rule refuses its payload, as a pure function (no database, no network)', () => {
  it.each(REFUSALS.map(([rule, when, run]) => [RULES[rule].id, when, rule, run] as const))(
    '%s: %s is refused',
    async (_id, _when, rule, run) => {
      await expectRefusedBy(run, rule);
    },
  );
});

describe('a valid payment passes every rule', () => {
  it('a signed /v1 authorization entry passes every offline rule, and the checked payment is what it signed', () => {
    const checked = checkOffline(input(valid), policy);
    expect(checked).toMatchObject({
      payer: buyer.publicKey(),
      to: payTo,
      amount: AMOUNT,
      contractId: USDC.contractId,
      signatureExpirationLedger: EXPIRATION,
      entryXdr: valid.toXDR('base64'),
    });
  });

  it('the same authorization in an x402 transaction envelope passes every offline rule', () => {
    const checked = checkOffline(
      input(valid, { x402Version: 2, declared: undefined, transaction: transactionXdr(valid) }),
      policy,
    );
    expect(checked).toMatchObject({ payer: buyer.publicKey(), to: payTo, amount: AMOUNT });
    expect(checked.decoded).toMatchObject({
      format: 'transaction',
      envelopeType: 'envelopeTypeTx',
      txSource: buyer.publicKey(),
      operationTypes: ['invokeHostFunction'],
    });
  });

  it('each offline rule function accepts the valid payment on its own', () => {
    const inp = input(valid);
    expect(() => checkProtocol(inp)).not.toThrow();
    const decoded = decodePayment('sorobanAuthorizationEntry', valid.toXDR('base64'));
    const { call, from, to, amount } = checkStructure(decoded, required);
    expect(checkAuthEntries(decoded, call, from).toXDR('base64')).toBe(valid.toXDR('base64'));
    expect(() => checkFacilitatorSafety(decoded, from, policy.facilitatorAddresses)).not.toThrow();
    expect(() =>
      checkDeclaredTerms(inp.declared, { from, to, amount, contractId: USDC.contractId, expiration: EXPIRATION }),
    ).not.toThrow();
    expect(() => checkAccountability(from, to, amount, policy.minimumStroops)).not.toThrow();
    expect(() => checkSignatures(valid, from, PASSPHRASE)).not.toThrow();
  });

  it('the ledger rules, the catalog terms and the configured network accept it', () => {
    expect(() => checkExpiry(EXPIRATION, LATEST, 300, 5)).not.toThrow();
    expect(() => checkSimulationSucceeded(simulation())).not.toThrow();
    expect(() => checkExactBalanceChanges(simulation(), expected)).not.toThrow();
    expect(() => checkCatalogTerms(resource, requirements)).not.toThrow();
    expect(() =>
      checkCatalogTerms(resource, { ...requirements, amount: toStroops('0.50'), asset: undefined }),
    ).not.toThrow();
    expect(resolveRequired(networks, requirements)).toEqual(required);
  });
});

describe('CAP-71 V2 address credentials (protocol 27) pass like V1 ones', () => {
  /** Two entries encoded by @stellar/stellar-sdk 17.2.0 (its lib/axios/esm/xdr on Node 20 with @stellar/js-xdr 5.0.0).
   * */
  const SDK17_V2 =
    'AAAAAgAAAAAAAAAA6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iwAAAAAAAAAKgAABBoAAAAQAAAAAQAAAAAAAAAAAAAA' +
    'AAAAAAATmPYsbRpFfFG6aktfPb0vafypMhYhjciZfkFr0X2TygAAAAh0cmFuc2ZlcgAAAAEAAAAKAAAAAAAAAAAAAAAAAAAABwAA' +
    'AAA=';
  const SDK17_DELEGATED =
    'AAAAAwAAAAAAAAAA6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iwAAAAAAAAAKgAABBoAAAAQAAAAAQAAAAAAAAABAAAA' +
    'AAAAAADqSmxj4pxSCr71UHsTLsX5lUd2rr6+e5JCHuppFEbSLAAAAAEAAAABAAAAAAAAAAATmPYsbRpFfFG6aktfPb0vafypMhYh' +
    'jciZfkFr0X2TygAAAA0AAABAAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB' +
    'AQEBAQEBAQAAAAAAAAAAAAAAAAAAAAATmPYsbRpFfFG6aktfPb0vafypMhYhjciZfkFr0X2TygAAAAh0cmFuc2ZlcgAAAAEAAAAK' +
    'AAAAAAAAAAAAAAAAAAAABwAAAAA=';

  it(
    'entries stellar-sdk 17 encodes (V2, and delegated with a nested delegate) decode on stellar-sdk 14 and ' +
      're-encode to the same bytes',
    () => {
      const v2 = xdr.SorobanAuthorizationEntry.fromXDR(SDK17_V2, 'base64');
      expect(credentialKind(v2.credentials())).toBe('sorobanCredentialsAddressV2');
      expect(addressCredentialsOf(v2.credentials())!.nonce().toString()).toBe('42');
      expect(v2.toXDR('base64')).toBe(SDK17_V2);
      const delegated = xdr.SorobanAuthorizationEntry.fromXDR(SDK17_DELEGATED, 'base64');
      expect(credentialKind(delegated.credentials())).toBe('sorobanCredentialsAddressWithDelegates');
      expect(addressCredentialsOf(delegated.credentials())).toBeNull();
      expect(delegated.toXDR('base64')).toBe(SDK17_DELEGATED);
    },
  );

  it(
    'a V2 entry from a G payer passes every offline rule in both forms, and the checked payment names its ' +
      'credential kind',
    () => {
      const v2 = signAccountEntry(valid, 2, [buyer], EXPIRATION, PASSPHRASE);
      for (const form of [input(v2), input(v2, { transaction: transactionXdr(v2) })]) {
        const checked = checkOffline(form, policy);
        expect({ payer: checked.payer, credentials: checked.credentials, nonce: checked.nonce }).toEqual({
          payer: buyer.publicKey(),
          credentials: 'sorobanCredentialsAddressV2',
          nonce: addressCredentialsOf(valid.credentials())!.nonce().toString(),
        });
      }
      expect(checkOffline(input(valid), policy).credentials).toBe('sorobanCredentialsAddress');
    },
  );

  it("a V2 entry from a C payer passes the offline rules (its signature is the simulation's to judge, like V1)", () => {
    const contract = StrKey.encodeContract(Buffer.alloc(32, 9));
    const body = new xdr.SorobanAddressCredentials({
      address: address(contract).address(),
      nonce: xdr.Int64.fromString('3'),
      signatureExpirationLedger: EXPIRATION,
      signature: xdr.ScVal.scvBytes(Buffer.alloc(64)),
    });
    const call = transferCall({ from: contract });
    const entry = new xdr.SorobanAuthorizationEntry({
      credentials: addressCredentials(2, body),
      rootInvocation: new xdr.SorobanAuthorizedInvocation({
        function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(call),
        subInvocations: [],
      }),
    });
    const checked = checkOffline(input(entry, { declared: undefined }), policy);
    expect({ payer: checked.payer, credentials: checked.credentials }).toEqual({
      payer: contract,
      credentials: 'sorobanCredentialsAddressV2',
    });
  });
});

describe('a failed simulation answers with what the host says went wrong (rule simulation.succeeds)', () => {
  it.each([
    ['HostError: Error(Contract, #10)', 'INSUFFICIENT_BALANCE'],
    ['HostError: Error(Contract, #13)', 'TRUSTLINE_REQUIRED'],
    ['HostError: Error(Contract, #11)', 'TRUSTLINE_REQUIRED'],
    ['HostError: Error(Contract, #6)', 'ACCOUNT_NOT_FOUND'],
    ['HostError: Error(Storage, MissingValue)', 'ACCOUNT_NOT_FOUND'],
    ['HostError: Error(Auth, ExistingValue)', 'REPLAY_DETECTED'],
    ['HostError: Error(Auth, InvalidAction)', 'INVALID_SIGNATURE'],
    ['HostError: Error(Budget, ExceededLimit)', 'SIMULATION_FAILED'],
  ])('%s answers %s, with the rule id simulation.succeeds', (error, code) => {
    expect(simulationErrorCode(error)).toBe(code);
    let thrown: DomainError | null = null;
    try {
      checkSimulationSucceeded(simulation({ error, events: [] }));
    } catch (e) {
      thrown = e as DomainError;
    }
    expect({ code: thrown?.code, rule: thrown?.details?.[0]?.code }).toEqual({
      code,
      rule: RULES.simulationSucceeds.id,
    });
  });
});

describe('every rule has a test', () => {
  it(
    'every rule of RULES is refused in this file or named in COVERED_ELSEWHERE with an existing HTTP-level test ' +
      'file',
    () => {
      const unitTested = new Set(REFUSALS.map(([rule]) => rule));
      const repo = path.resolve(__dirname, '../../..');
      for (const name of Object.keys(RULES) as RuleName[]) {
        const elsewhere = COVERED_ELSEWHERE[name];
        expect({ rule: RULES[name].id, covered: unitTested.has(name) || elsewhere !== undefined }).toEqual({
          rule: RULES[name].id,
          covered: true,
        });
        if (elsewhere)
          expect({ rule: RULES[name].id, file: elsewhere, exists: fs.existsSync(path.join(repo, elsewhere)) }).toEqual({
            rule: RULES[name].id,
            file: elsewhere,
            exists: true,
          });
      }
    },
  );

  it('no rule is both unit-tested here and listed as covered elsewhere', () => {
    for (const [rule] of REFUSALS) expect(COVERED_ELSEWHERE[rule]).toBeUndefined();
  });
});
