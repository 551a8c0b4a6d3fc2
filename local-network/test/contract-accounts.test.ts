import { Address, Asset, Keypair, StrKey, rpc, scValToNative, xdr } from '@stellar/stellar-sdk';
import { LocalNetwork } from '../src';
import {
  authPayload,
  buildTransfer,
  fundedAccount,
  rpcClient,
  signAuthEntry,
  startTestNetwork,
  submitAndClose,
  withAuthSignature,
} from './helpers';

async function post(
  network: LocalNetwork,
  path: string,
  body: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${network.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** The account contract's signature: bytes(64), the ed25519 signature of the authorization payload. */
const signAsContract =
  (key: Keypair, passphrase: string) => (entry: xdr.SorobanAuthorizationEntry, expiration: number) =>
    withAuthSignature(entry, expiration, xdr.ScVal.scvBytes(key.sign(authPayload(entry, expiration, passphrase))));

describe('contract-account payers (the built-in ed25519 account contract)', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let payee: Keypair;

  beforeAll(async () => {
    network = await startTestNetwork();
    server = rpcClient(network);
    payee = await fundedAccount(network, '1');
  });
  afterAll(() => network.stop());

  async function fundedContractAccount(usdc = '10'): Promise<{ key: Keypair; contractId: string }> {
    const key = Keypair.random();
    const { status, json } = await post(network, '/contract-account', { publicKey: key.publicKey() });
    expect(status).toBe(200);
    const contractId = json.contractId as string;
    expect((await post(network, '/faucet', { address: contractId, asset: 'USDC', amount: usdc })).status).toBe(200);
    return { key, contractId };
  }

  const transferFrom = async (
    contractId: string,
    signAuth: Parameters<typeof buildTransfer>[0]['signAuth'],
    amount = 20_000_000n,
  ) =>
    buildTransfer({
      network,
      server,
      submitter: await fundedAccount(network, '0'),
      from: contractId,
      to: payee.publicKey(),
      amount,
      signAuth,
    });

  it(
    'POST /contract-account deploys one instance per key (same id again), served by getLedgerEntries with its ' +
      'public key',
    async () => {
      const key = Keypair.random();
      const first = await post(network, '/contract-account', { publicKey: key.publicKey() });
      const again = await post(network, '/contract-account', { publicKey: key.publicKey() });
      expect(StrKey.isValidContract(first.json.contractId as string)).toBe(true);
      expect(again.json.contractId).toBe(first.json.contractId);
      expect(await network.deployContractAccount(key.publicKey())).toBe(first.json.contractId);
      const instanceKey = xdr.LedgerKey.contractData(
        new xdr.LedgerKeyContractData({
          contract: new Address(first.json.contractId as string).toScAddress(),
          key: xdr.ScVal.scvLedgerKeyContractInstance(),
          durability: xdr.ContractDataDurability.persistent(),
        }),
      );
      const { entries } = await server.getLedgerEntries(instanceKey);
      const instance = entries[0].val.contractData().val().instance();
      expect(instance.executable().switch().name).toBe('contractExecutableWasm');
      expect(instance.storage()?.[0].val().bytes()).toEqual(key.rawPublicKey());
      expect((await post(network, '/contract-account', { publicKey: 'not-a-key' })).status).toBe(400);
    },
  );

  it('the faucet funds a contract address: its SAC balance holds the amount', async () => {
    const { contractId } = await fundedContractAccount('7.5');
    expect(network.balance(contractId, 'USDC')).toBe('7.5');
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    const balance = await server.getSACBalance(contractId, new Asset('USDC', usdc.issuer), network.networkPassphrase);
    expect(balance.balanceEntry?.amount).toBe('75000000');
  });

  it(
    'a transfer from a contract-account payer with a valid signature simulates with its transfer event and ' +
      'applies',
    async () => {
      const { key, contractId } = await fundedContractAccount();
      const tx = await transferFrom(contractId, signAsContract(key, network.networkPassphrase));
      const sim = await server.simulateTransaction(tx);
      expect(rpc.Api.isSimulationSuccess(sim)).toBe(true);
      if (!rpc.Api.isSimulationSuccess(sim)) return;
      const transfer = sim.events.map((e) => e.event()).find((e) => e.type().name === 'contract')!;
      const topics = transfer
        .body()
        .v0()
        .topics()
        .map((t) => scValToNative(t));
      expect(topics.slice(0, 3)).toEqual(['transfer', contractId, payee.publicKey()]);
      expect((await submitAndClose(network, server, tx)).status).toBe('SUCCESS');
      expect(network.balance(contractId, 'USDC')).toBe('8');
      expect(network.balance(payee.publicKey(), 'USDC')).toBe('3');
    },
  );

  it(
    "when the contract account's signature is by another key, simulation fails (Error(Crypto, InvalidInput)) and " +
      'apply fails',
    async () => {
      const { contractId } = await fundedContractAccount();
      const tx = await transferFrom(contractId, signAsContract(Keypair.random(), network.networkPassphrase));
      const sim = await server.simulateTransaction(tx);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(
        /Error\(Crypto, InvalidInput\)[\s\S]*account contract/,
      );
      expect((await submitAndClose(network, server, tx)).status).toBe('FAILED');
      expect(network.balance(contractId, 'USDC')).toBe('10');
    },
  );

  it('when the contract account gets a G-account-style signature vec instead of bytes(64), it is refused', async () => {
    const { key, contractId } = await fundedContractAccount();
    const tx = await transferFrom(contractId, (entry, expiration) =>
      signAuthEntry(entry, [key], expiration, network.networkPassphrase),
    );
    const sim = await server.simulateTransaction(tx);
    expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/Error\(Value, UnexpectedType\)[\s\S]*bytes\(64\)/);
  });

  it('a C address with no deployed contract cannot authorize a transfer', async () => {
    const ghost = StrKey.encodeContract(Buffer.alloc(32, 9));
    await network.faucet(ghost, 'USDC', '1');
    const tx = await transferFrom(ghost, signAsContract(Keypair.random(), network.networkPassphrase), 1n);
    const sim = await server.simulateTransaction(tx);
    expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/Error\(Storage, MissingValue\)/);
  });
});
