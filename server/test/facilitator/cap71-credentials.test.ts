/**
 * CAP-71 (protocol 27) credentials at the facilitator, against the running service on the local network (local
 * simulation): V1 (`sorobanCredentialsAddress`) and V2 (`sorobanCredentialsAddressV2`) address credentials from G
 * and C payers verify and settle on /v1 and /x402; delegated (`sorobanCredentialsAddressWithDelegates`) and
 * source-account credentials are refused with their own rule ids, before any ledger call.
 */
import request from 'supertest';
import { Address, Keypair, xdr } from '@stellar/stellar-sdk';
import { RULES } from '../../src/domain/facilitator/rules/catalog';
import { asDelegated, signAccountEntry, signContractEntry } from '../support/cap71';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  sendTransactions,
  startFacilitatorEnv,
  x402Body,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';
import { toStroops } from '../../src/domain/amount';
import { addressCredentials } from '../../src/domain/facilitator/cap71-xdr';

describe('CAP-71 V2 address credentials at the facilitator', () => {
  let env: FacilitatorEnv;
  const app = () => env.svc.app;
  const verify = (c: PaymentCase, extra: Record<string, unknown> = {}) =>
    request(app())
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, ...extra });
  const settle = (id: string, c: PaymentCase, resourceId: string) =>
    request(app()).post('/v1/settle').send({ paymentAttemptId: id, paymentPayload: c.payload, resourceId });

  beforeAll(async () => {
    env = await startFacilitatorEnv();
  });
  afterAll(() => env.stop());

  /** An unsigned V1 transfer entry from `from` (G or C) to `payTo`. */
  function transferEntry(from: string, payTo: string, amount: string): xdr.SorobanAuthorizationEntry {
    const args = [
      new Address(from).toScVal(),
      new Address(payTo).toScVal(),
      xdr.ScVal.scvI128(
        new xdr.Int128Parts({ hi: xdr.Int64.fromString('0'), lo: xdr.Uint64.fromString(toStroops(amount).toString()) }),
      ),
    ];
    return new xdr.SorobanAuthorizationEntry({
      credentials: addressCredentials(
        1,
        new xdr.SorobanAddressCredentials({
          address: new Address(from).toScAddress(),
          nonce: xdr.Int64.fromString(String(Math.floor(Math.random() * 2 ** 52))),
          signatureExpirationLedger: 0,
          signature: xdr.ScVal.scvVoid(),
        }),
      ),
      rootInvocation: new xdr.SorobanAuthorizedInvocation({
        function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
          new xdr.InvokeContractArgs({
            contractAddress: new Address(env.usdc.contractId).toScAddress(),
            functionName: 'transfer',
            args,
          }),
        ),
        subInvocations: [],
      }),
    });
  }

  /** A /v1 payment case around a signed entry. */
  function caseOf(
    entry: xdr.SorobanAuthorizationEntry,
    payTo: string,
    amount: string,
    expiresAtLedger: number,
  ): PaymentCase {
    const asset = { code: 'USDC', issuer: env.usdc.issuer };
    return {
      entry,
      payload: {
        scheme: 'exact',
        network: 'stellar:testnet',
        asset,
        amount,
        payTo,
        expiresAtLedger,
        authorization: { format: 'sorobanAuthorizationEntry', xdr: entry.toXDR('base64') },
      },
      requirements: { scheme: 'exact', network: 'stellar:testnet', amount, payTo, asset, maxTimeoutSeconds: 300 },
    };
  }

  /** A funded payer of each kind, and how it signs a V1 or V2 entry. */
  async function payer(kind: 'G' | 'C'): Promise<{
    address: string;
    sign(e: xdr.SorobanAuthorizationEntry, version: 1 | 2, expiration: number): xdr.SorobanAuthorizationEntry;
  }> {
    const passphrase = env.network.networkPassphrase;
    if (kind === 'G') {
      const k = await fundedBuyer(env, '3');
      return { address: k.publicKey(), sign: (e, v, exp) => signAccountEntry(e, v, [k], exp, passphrase) };
    }
    const key = Keypair.random();
    const contractId = await env.network.deployContractAccount(key.publicKey());
    await env.network.faucet(contractId, 'USDC', '3');
    return { address: contractId, sign: (e, v, exp) => signContractEntry(e, v, key, exp, passphrase) };
  }

  it.each([
    [1, 'G'],
    [2, 'G'],
    [1, 'C'],
    [2, 'C'],
  ] as const)(
    'V%s address credentials from a %s payer verify and settle on /v1, and the money moves once',
    async (version, kind) => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const p = await payer(kind);
      const expiration = env.network.latestLedger() + 50;
      const c = caseOf(
        p.sign(transferEntry(p.address, seller.wallet.publicKey(), '0.5'), version, expiration),
        seller.wallet.publicKey(),
        '0.5',
        expiration,
      );
      const v = await verify(c, { resourceId: resource.id });
      expect({ status: v.status, payer: v.body.payer }).toEqual({ status: 200, payer: p.address });
      const s = await settle(v.body.paymentAttemptId, c, resource.id);
      expect(s.status).toBe(200);
      expect(env.network.balance(p.address, 'USDC')).toBe('2.5');
    },
  );

  it(
    'a V2 payment in an x402 transaction envelope from a G payer ' + 'verifies and settles on /x402, naming its payer',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '3');
      const v1 = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
      const expiration = v1.payload.expiresAtLedger;
      const c = { ...v1, entry: signAccountEntry(v1.entry, 2, [buyer], expiration, env.network.networkPassphrase) };
      const body = x402Body(
        env,
        buyer,
        c,
        { amount: '0.5', payTo: seller.wallet.publicKey() },
        resource.url.replace('{city}', 'oslo'),
      );
      const verified = await request(app()).post('/x402/verify').send(body);
      expect(verified.body).toMatchObject({ isValid: true, payer: buyer.publicKey() });
      const settled = await request(app()).post('/x402/settle').send(body);
      expect(settled.body).toMatchObject({ success: true, payer: buyer.publicKey(), network: 'stellar:testnet' });
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('2.5');
    },
  );

  it(
    'delegated credentials are refused with auth.no_delegated_credentials on /v1 and /x402, before any ' +
      'transaction is sent',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '3');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
      const delegated = {
        ...c,
        entry: asDelegated(c.entry),
        payload: {
          ...c.payload,
          authorization: { format: 'sorobanAuthorizationEntry', xdr: asDelegated(c.entry).toXDR('base64') },
        },
      };
      const sends = await sendTransactions(env);
      const res = await verify(delegated);
      expect({ status: res.status, code: res.body.error?.code, rule: res.body.error?.details?.[0]?.code }).toEqual({
        status: 400,
        code: RULES.noDelegatedCredentials.code,
        rule: 'auth.no_delegated_credentials',
      });
      const x = await request(app())
        .post('/x402/settle')
        .send(
          x402Body(
            env,
            buyer,
            delegated,
            { amount: '0.5', payTo: seller.wallet.publicKey() },
            resource.url.replace('{city}', 'oslo'),
          ),
        );
      expect(x.body).toMatchObject({ success: false, errorReason: RULES.noDelegatedCredentials.x402Reason });
      expect(await sendTransactions(env)).toBe(sends);
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('3');
    },
  );

  it(
    'source-account credentials are refused with ' +
      'auth.address_credentials_only, whatever else the payload ' +
      'carries',
    async () => {
      const { seller } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '3');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
      const source = new xdr.SorobanAuthorizationEntry({
        credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
        rootInvocation: c.entry.rootInvocation(),
      });
      const res = await verify({
        ...c,
        payload: { ...c.payload, authorization: { format: 'sorobanAuthorizationEntry', xdr: source.toXDR('base64') } },
      });
      expect({ status: res.status, code: res.body.error?.code, rule: res.body.error?.details?.[0]?.code }).toEqual({
        status: 400,
        code: RULES.addressCredentials.code,
        rule: 'auth.address_credentials_only',
      });
    },
  );
});
