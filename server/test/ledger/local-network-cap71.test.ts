import {
  Account,
  BASE_FEE,
  Contract,
  Keypair,
  TransactionBuilder,
  nativeToScVal,
  rpc,
  xdr,
} from '@stellar/stellar-sdk';
import { LocalNetwork } from '@paid-api-marketplace/local-network';
import { addressCredentialsOf, credentialKind } from '../../src/domain/facilitator/cap71-xdr';
import {
  asDelegated,
  payloadFor,
  signAccountEntry,
  signContractEntry,
  withCredentials,
  accountSignature,
} from '../support/cap71';
import {
  buildTransfer,
  fundedAccount,
  rpcClient,
  startTestNetwork,
  submitAndClose,
} from '../../../local-network/test/helpers';

/**
 * CAP-71 (protocol 27) on the local network: V2 address credentials (sorobanCredentialsAddressV2, signature over
 * HashIdPreimage envelopeTypeSorobanAuthorizationWithAddress) are produced by a recording simulation that asks for
 * useUpgradedAuth and enforced like V1 ones, for G and C payers; delegated credentials are refused by name.
 */
describe('CAP-71 credentials on the local network', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let payee: Keypair;

  beforeAll(async () => {
    network = await startTestNetwork();
    server = rpcClient(network);
    payee = await fundedAccount(network, '1');
  });
  afterAll(() => network.stop());

  async function rawSimulate(
    tx: string,
    useUpgradedAuth?: boolean,
  ): Promise<{ results?: Array<{ auth: string[] }>; error?: string }> {
    const params = { transaction: tx, ...(useUpgradedAuth === undefined ? {} : { useUpgradedAuth }) };
    const res = await fetch(network.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'simulateTransaction', params }),
    });
    return ((await res.json()) as { result: { results?: Array<{ auth: string[] }>; error?: string } }).result;
  }

  async function unsignedTransfer(from: string): Promise<string> {
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    const submitter = await fundedAccount(network, '0');
    const op = new Contract(usdc.contractId).call(
      'transfer',
      nativeToScVal(from, { type: 'address' }),
      nativeToScVal(payee.publicKey(), { type: 'address' }),
      nativeToScVal(1n, { type: 'i128' }),
    );
    return new TransactionBuilder(new Account(submitter.publicKey(), '1'), {
      fee: BASE_FEE,
      networkPassphrase: network.networkPassphrase,
    })
      .addOperation(op)
      .setTimeout(60)
      .build()
      .toXDR();
  }

  it(
    'a recording simulation records V1 address credentials by default and V2 ones when it asks for ' +
      'useUpgradedAuth',
    async () => {
      const payer = await fundedAccount(network, '1');
      const tx = await unsignedTransfer(payer.publicKey());
      const kinds = async (upgraded?: boolean) =>
        (await rawSimulate(tx, upgraded)).results![0].auth.map((a) =>
          credentialKind(xdr.SorobanAuthorizationEntry.fromXDR(a, 'base64').credentials()),
        );
      expect(await kinds()).toEqual(['sorobanCredentialsAddress']);
      expect(await kinds(false)).toEqual(['sorobanCredentialsAddress']);
      expect(await kinds(true)).toEqual(['sorobanCredentialsAddressV2']);
    },
  );

  it("a G payer's V2 authorization simulates, applies once, and its nonce is consumed like a V1 one", async () => {
    const payer = await fundedAccount(network, '10');
    const tx = await buildTransfer({
      network,
      server,
      submitter: await fundedAccount(network, '0'),
      from: payer.publicKey(),
      to: payee.publicKey(),
      amount: 10_000_000n,
      signAuth: (e, exp) => signAccountEntry(e, 2, [payer], exp, network.networkPassphrase),
    });
    const auth = (tx.operations[0] as unknown as { auth: xdr.SorobanAuthorizationEntry[] }).auth;
    expect(credentialKind(auth[0].credentials())).toBe('sorobanCredentialsAddressV2');
    expect(rpc.Api.isSimulationSuccess(await server.simulateTransaction(tx))).toBe(true);
    expect((await submitAndClose(network, server, tx)).status).toBe('SUCCESS');
    expect(network.balance(payer.publicKey(), 'USDC')).toBe('9');
    const again = await server.simulateTransaction(tx);
    expect(rpc.Api.isSimulationError(again) && again.error).toMatch(/Error\(Auth, ExistingValue\)/);
  });

  it("a C payer's (ed25519 account contract) V2 authorization applies", async () => {
    const key = Keypair.random();
    const contractId = await network.deployContractAccount(key.publicKey());
    await network.faucet(contractId, 'USDC', '5');
    const tx = await buildTransfer({
      network,
      server,
      submitter: await fundedAccount(network, '0'),
      from: contractId,
      to: payee.publicKey(),
      amount: 10_000_000n,
      signAuth: (e, exp) => signContractEntry(e, 2, key, exp, network.networkPassphrase),
    });
    expect((await submitAndClose(network, server, tx)).status).toBe('SUCCESS');
    expect(network.balance(contractId, 'USDC')).toBe('4');
  });

  it(
    'credential arm swap: a V1 signature sent as V2 credentials (or the reverse) does not verify, and nothing ' +
      'moves',
    async () => {
      const payer = await fundedAccount(network, '3');
      for (const [signed, sent] of [
        [1, 2],
        [2, 1],
      ] as const) {
        const tx = await buildTransfer({
          network,
          server,
          submitter: await fundedAccount(network, '0'),
          from: payer.publicKey(),
          to: payee.publicKey(),
          amount: 10_000_000n,
          signAuth: (e, exp) => {
            const signedEntry = signAccountEntry(e, signed, [payer], exp, network.networkPassphrase);
            return withCredentials(
              signedEntry,
              sent,
              exp,
              addressCredentialsOf(signedEntry.credentials())!.signature(),
            );
          },
        });
        const sim = await server.simulateTransaction(tx);
        expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/Error\(Crypto, InvalidInput\)/);
        expect((await submitAndClose(network, server, tx)).status).toBe('FAILED');
      }
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('3');
    },
  );

  it(
    'cross-address replay: a V2 signature the key made for ' + 'another address is refused for the payer it names',
    async () => {
      const payer = await fundedAccount(network, '3');
      const elsewhere = Keypair.random().publicKey();
      const tx = await buildTransfer({
        network,
        server,
        submitter: await fundedAccount(network, '0'),
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 10_000_000n,
        signAuth: (e, exp) => {
          const unsigned = withCredentials(e, 2, exp, xdr.ScVal.scvVoid());
          return withCredentials(
            unsigned,
            2,
            exp,
            accountSignature([payer], payloadFor(2, unsigned, exp, network.networkPassphrase, elsewhere)),
          );
        },
      });
      const sim = await server.simulateTransaction(tx);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/Error\(Crypto, InvalidInput\)/);
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('3');
    },
  );

  it(
    'delegated credentials ' + '(sorobanCredentialsAddressWithDelegates) are refused by ' + 'name, and nothing moves',
    async () => {
      const payer = await fundedAccount(network, '3');
      const tx = await buildTransfer({
        network,
        server,
        submitter: await fundedAccount(network, '0'),
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 10_000_000n,
        signAuth: (e, exp) => asDelegated(signAccountEntry(e, 1, [payer], exp, network.networkPassphrase)),
      });
      const sim = await server.simulateTransaction(tx);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(
        /delegated credentials \(CAP-71 sorobanCredentialsAddressWithDelegates\)/,
      );
      expect((await submitAndClose(network, server, tx)).status).toBe('FAILED');
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('3');
    },
  );
});
