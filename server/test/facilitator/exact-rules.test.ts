/**
 * One refusal per offline rule of the x402 `exact` Stellar scheme (rules/catalog.ts), as a client sees it on
 * POST /v1/verify: the status, the code, and the rule id in error.details[0].code. Every payload is real XDR signed
 * with real ed25519 keys; the service, database and local network are real (local simulation). Rules that need
 * ledger state are in attacks.test.ts and verify-errors.test.ts.
 */
import request from 'supertest';
import { Account, Asset, Keypair, Operation, StrKey, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { RULES } from '../../src/domain/facilitator/rules/catalog';
import { stroops } from '../../src/domain/amount';
import type { AssetContractId } from '../../src/domain/network-registry';
import { checkExactBalanceChanges } from '../../src/domain/facilitator/rules/simulation';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  signTransfer,
  startFacilitatorEnv,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';

describe('the x402 exact Stellar rules, one refusal each (POST /v1/verify)', () => {
  let env: FacilitatorEnv;
  let payTo: string;
  let buyer: Keypair;
  let channel: string;

  beforeAll(async () => {
    env = await startFacilitatorEnv();
    payTo = (await sellerWithResource(env, '0.5')).seller.wallet.publicKey();
    buyer = await fundedBuyer(env, '5');
    channel = ((await request(env.svc.app).get('/x402/supported')).body.signers['stellar:testnet'] as string[])[0];
  });
  afterAll(() => env.stop());

  /** A transaction envelope carrying `ops` from `source` (the x402 payload form). */
  function tx(source: string, ops: xdr.Operation[]): string {
    const b = new TransactionBuilder(new Account(source, '1'), {
      fee: '100',
      networkPassphrase: env.network.networkPassphrase,
    }).setTimeout(60);
    for (const op of ops) b.addOperation(op);
    return b.build().toXDR();
  }
  const invoke = (
    entry: xdr.SorobanAuthorizationEntry,
    extra: { auth?: xdr.SorobanAuthorizationEntry[]; source?: string } = {},
  ) =>
    Operation.invokeHostFunction({
      func: xdr.HostFunction.hostFunctionTypeInvokeContract(entry.rootInvocation().function().contractFn()),
      auth: extra.auth ?? [entry],
      ...(extra.source ? { source: extra.source } : {}),
    });
  const withXdr = (c: PaymentCase, transaction: string): PaymentCase => ({
    ...c,
    payload: { ...c.payload, authorization: { format: 'transaction', xdr: transaction } },
  });

  async function refusedBy(c: PaymentCase, rule: keyof typeof RULES): Promise<void> {
    const res = await request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
    expect({ code: res.body.error?.code, rule: res.body.error?.details?.[0]?.code }).toEqual({
      code: RULES[rule].code,
      rule: RULES[rule].id,
    });
  }
  const valid = () => paymentCase(env, buyer, payTo, '0.5');

  it('protocol.x402_version: a payload that says x402Version 1 is refused', async () => {
    const c = await valid();
    await refusedBy({ ...c, payload: { ...c.payload, x402Version: 1 } }, 'x402Version');
  });

  it('protocol.network_matches: a testnet payload for pubnet requirements is refused', async () => {
    const c = await valid();
    await refusedBy(
      { ...c, requirements: { ...c.requirements, network: 'stellar:pubnet', asset: undefined } },
      'networkMatches',
    );
  });

  it('structure.decodable: bytes that are not a transaction envelope are refused', async () => {
    await refusedBy(withXdr(await valid(), 'AAAAAQ=='), 'decodable');
  });

  it('structure.plain_transaction: a fee-bump envelope is refused', async () => {
    const c = await valid();
    const inner = TransactionBuilder.fromXDR(tx(buyer.publicKey(), [invoke(c.entry)]), env.network.networkPassphrase);
    const bump = TransactionBuilder.buildFeeBumpTransaction(
      buyer.publicKey(),
      '200',
      inner as never,
      env.network.networkPassphrase,
    );
    await refusedBy(withXdr(c, bump.toXDR()), 'plainTransaction');
  });

  it('structure.single_invoke_host_function: a second operation (a payment out of the payer) is refused', async () => {
    const c = await valid();
    const drain = Operation.payment({ destination: Keypair.random().publicKey(), asset: Asset.native(), amount: '1' });
    await refusedBy(withXdr(c, tx(buyer.publicKey(), [invoke(c.entry), drain])), 'singleInvoke');
  });

  it(
    'structure.invoke_contract: a host function that uploads ' + 'code instead of calling a contract is refused',
    async () => {
      const c = await valid();
      const upload = Operation.invokeHostFunction({
        func: xdr.HostFunction.hostFunctionTypeUploadContractWasm(Buffer.from('00', 'hex')),
        auth: [c.entry],
      });
      await refusedBy(withXdr(c, tx(buyer.publicKey(), [upload])), 'invokeContract');
    },
  );

  it(
    'structure.contract_is_required_asset: a transfer on the ' + 'XLM contract for USDC requirements is refused',
    async () => {
      const entry = await signTransfer({
        env,
        buyer,
        payTo,
        amount: '0.5',
        contractId: Asset.native().contractId(env.network.networkPassphrase),
        expiration: env.network.latestLedger() + 50,
      });
      const c = await valid();
      await refusedBy(withXdr(c, tx(buyer.publicKey(), [invoke(entry)])), 'contractIsAsset');
    },
  );

  it('structure.transfer_three_arguments: a call to another function of the asset contract is refused', async () => {
    const c = await valid();
    const call = c.entry.rootInvocation().function().contractFn();
    const burn = new xdr.InvokeContractArgs({
      contractAddress: call.contractAddress(),
      functionName: 'burn',
      args: [call.args()[0], call.args()[2]],
    });
    const op = Operation.invokeHostFunction({
      func: xdr.HostFunction.hostFunctionTypeInvokeContract(burn),
      auth: [c.entry],
    });
    await refusedBy(withXdr(c, tx(buyer.publicKey(), [op])), 'transferCall');
  });

  it(
    'structure.amount_is_required and structure.recipient_is_pay_to: another amount or recipient than required ' +
      'is refused',
    async () => {
      const c = await valid();
      await refusedBy({ ...c, requirements: { ...c.requirements, amount: '0.6' } }, 'amount');
      const other = await sellerWithResource(env, '0.5');
      await refusedBy(
        { ...c, requirements: { ...c.requirements, payTo: other.seller.wallet.publicKey() } },
        'recipient',
      );
    },
  );

  it('structure.declared_terms_match: a /v1 payload declaring another expiry than it signed is refused', async () => {
    const c = await valid();
    await refusedBy(
      { ...c, payload: { ...c.payload, expiresAtLedger: (c.payload.expiresAtLedger as number) + 1 } },
      'declaredTerms',
    );
  });

  it(
    'auth.address_credentials_only: an auth entry with source-account credentials (authorizing the facilitator ' +
      'as source) is refused',
    async () => {
      const c = await valid();
      const sourceCreds = new xdr.SorobanAuthorizationEntry({
        credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
        rootInvocation: c.entry.rootInvocation(),
      });
      await refusedBy(
        withXdr(c, tx(buyer.publicKey(), [invoke(c.entry, { auth: [c.entry, sourceCreds] })])),
        'addressCredentials',
      );
    },
  );

  it("auth.entry_for_from: a second signed entry (of another address) beside the payer's is refused", async () => {
    const c = await valid();
    const other = await signTransfer({
      env,
      buyer: await fundedBuyer(env, '1'),
      payTo,
      amount: '0.5',
      expiration: env.network.latestLedger() + 50,
    });
    await refusedBy(withXdr(c, tx(buyer.publicKey(), [invoke(c.entry, { auth: [c.entry, other] })])), 'signedByFrom');
  });

  it('auth.no_sub_invocations: an entry that also authorizes a sub-invocation is refused', async () => {
    const c = await valid();
    const entry = xdr.SorobanAuthorizationEntry.fromXDR(c.entry.toXDR());
    entry.rootInvocation().subInvocations([c.entry.rootInvocation()]);
    await refusedBy(withXdr(c, tx(buyer.publicKey(), [invoke(entry)])), 'noSubInvocations');
  });

  it(
    'auth.signatures_verify: an entry whose signature bytes ' + 'were altered is refused before any ledger call',
    async () => {
      const c = await valid();
      const entry = xdr.SorobanAuthorizationEntry.fromXDR(c.entry.toXDR());
      const sig = entry
        .credentials()
        .address()
        .signature()
        .vec()![0]
        .map()!
        .find((e) => e.key().sym().toString() === 'signature')!;
      const bytes = Buffer.from(sig.val().bytes());
      bytes[0] ^= 0xff;
      sig.val(xdr.ScVal.scvBytes(bytes));
      await refusedBy(withXdr(c, tx(buyer.publicKey(), [invoke(entry)])), 'signatures');
    },
  );

  it(
    'safety: the facilitator as transaction source, as operation source, or as payer is refused (an entry naming ' +
      'it is refused by these first; safety.facilitator_not_in_auth stays as defence in depth)',
    async () => {
      const c = await valid();
      await refusedBy(withXdr(c, tx(channel, [invoke(c.entry)])), 'txSource');
      await refusedBy(withXdr(c, tx(buyer.publicKey(), [invoke(c.entry, { source: channel })])), 'opSource');
      // "pay from the facilitator": a transfer whose from is our channel (nobody can sign it but us)
      const fromUs = await signTransfer({
        env,
        buyer: Keypair.random(),
        payTo,
        amount: '0.5',
        expiration: env.network.latestLedger() + 50,
      });
      const call = fromUs.rootInvocation().function().contractFn();
      call.args()[0] = xdr.ScVal.scvAddress(
        xdr.ScAddress.scAddressTypeAccount(Keypair.fromPublicKey(channel).xdrAccountId()),
      );
      fromUs
        .credentials()
        .address()
        .address(xdr.ScAddress.scAddressTypeAccount(Keypair.fromPublicKey(channel).xdrAccountId()));
      await refusedBy(withXdr(c, tx(buyer.publicKey(), [invoke(fromUs)])), 'fromNotFacilitator');
    },
  );

  it('simulation.exact_balance_changes: a simulation showing a second transfer, or another amount, is refused', () => {
    const payer = Keypair.random().publicKey();
    const contractId = env.usdc.contractId as AssetContractId; // the local network's USDC contract
    const event = (from: string, to: string, amount: bigint) =>
      new xdr.DiagnosticEvent({
        inSuccessfulContractCall: true,
        event: new xdr.ContractEvent({
          ext: new xdr.ExtensionPoint(0),
          contractId: StrKey.decodeContract(contractId) as unknown as xdr.Hash,
          type: xdr.ContractEventType.contract(),
          body: new xdr.ContractEventBody(
            0,
            new xdr.ContractEventV0({
              topics: [
                xdr.ScVal.scvSymbol('transfer'),
                xdr.ScVal.scvAddress(xdr.ScAddress.scAddressTypeAccount(Keypair.fromPublicKey(from).xdrAccountId())),
                xdr.ScVal.scvAddress(xdr.ScAddress.scAddressTypeAccount(Keypair.fromPublicKey(to).xdrAccountId())),
              ],
              data: xdr.ScVal.scvI128(
                new xdr.Int128Parts({ hi: xdr.Int64.fromString('0'), lo: xdr.Uint64.fromString(amount.toString()) }),
              ),
            }),
          ),
        }),
      });
    const expected = { payer, payTo, amount: stroops(5_000_000n), contractId };
    const sim = (events: xdr.DiagnosticEvent[]) => ({ latestLedger: 1, error: null, events, minResourceFee: 0n });
    expect(() => checkExactBalanceChanges(sim([event(payer, payTo, 5_000_000n)]), expected)).not.toThrow();
    const extra = () =>
      checkExactBalanceChanges(
        sim([event(payer, payTo, 5_000_000n), event(payer, Keypair.random().publicKey(), 1n)]),
        expected,
      );
    expect(extra).toThrow(
      expect.objectContaining({
        code: 'SIMULATION_FAILED',
        details: [expect.objectContaining({ code: RULES.exactBalanceChanges.id })],
      }),
    );
    const more = () => checkExactBalanceChanges(sim([event(payer, payTo, 6_000_000n)]), expected);
    expect(more).toThrow(
      expect.objectContaining({ details: [expect.objectContaining({ code: RULES.exactBalanceChanges.id })] }),
    );
  });
});
