import { Asset, Keypair, Operation, rpc, xdr } from '@stellar/stellar-sdk';
import { LocalNetwork } from '../src';
import {
  buildTransfer,
  classicTransaction,
  fundedAccount,
  resultCode,
  rpcClient,
  signAuthEntry,
  startTestNetwork,
  submitAndClose,
} from './helpers';

/** The account entry as getLedgerEntries serves it. */
async function accountEntry(server: rpc.Server, accountId: string): Promise<xdr.AccountEntry> {
  const key = xdr.LedgerKey.account(
    new xdr.LedgerKeyAccount({ accountId: Keypair.fromPublicKey(accountId).xdrAccountId() }),
  );
  const { entries } = await server.getLedgerEntries(key);
  return entries[0].val.account();
}

describe('account signers and thresholds (setOptions, Soroban address credentials of G accounts)', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let payee: Keypair;

  beforeAll(async () => {
    network = await startTestNetwork();
    server = rpcClient(network);
    payee = await fundedAccount(network, '1');
  });
  afterAll(() => network.stop());

  /** A 2-of-2 account: master weight 1, a second key of weight 1, medium and high thresholds 2. */
  async function multisigAccount(): Promise<{ account: Keypair; cosigner: Keypair }> {
    const account = await fundedAccount(network, '100');
    const cosigner = Keypair.random();
    const { final } = await classicTransaction(
      network,
      server,
      account.publicKey(),
      [account],
      [
        Operation.setOptions({
          signer: { ed25519PublicKey: cosigner.publicKey(), weight: 1 },
          lowThreshold: 1,
          medThreshold: 2,
          highThreshold: 2,
        }),
      ],
    );
    expect(final?.status).toBe('SUCCESS');
    return { account, cosigner };
  }

  /** An account whose master key weight is 0 and whose only signer is another key. */
  async function disabledMasterAccount(): Promise<{ account: Keypair; signer: Keypair }> {
    const account = await fundedAccount(network, '100');
    const signer = Keypair.random();
    const { final } = await classicTransaction(
      network,
      server,
      account.publicKey(),
      [account],
      [Operation.setOptions({ signer: { ed25519PublicKey: signer.publicKey(), weight: 1 }, masterWeight: 0 })],
    );
    expect(final?.status).toBe('SUCCESS');
    return { account, signer };
  }

  const transferFrom = async (from: Keypair, extra: Partial<Parameters<typeof buildTransfer>[0]>) =>
    buildTransfer({
      network,
      server,
      submitter: await fundedAccount(network, '0'),
      from: from.publicKey(),
      to: payee.publicKey(),
      amount: 1_000_000n,
      ...extra,
    });

  it('setOptions stores the signer, thresholds and sub-entry, as getLedgerEntries shows', async () => {
    const { account, cosigner } = await multisigAccount();
    const entry = await accountEntry(server, account.publicKey());
    expect([...entry.thresholds()]).toEqual([1, 1, 2, 2]);
    expect(entry.signers().map((s) => [s.key().ed25519().toString('hex'), s.weight()])).toEqual([
      [cosigner.rawPublicKey().toString('hex'), 1],
    ]);
    expect(entry.numSubEntries()).toBe(2);
  });

  it(
    'when a multisig payer signs the auth entry with one key only, simulation and apply refuse it (weight below ' +
      'the medium threshold)',
    async () => {
      const { account } = await multisigAccount();
      const tx = await transferFrom(account, { authSigners: [account] });
      const sim = await server.simulateTransaction(tx);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/signature weight is lower than threshold: 1 < 2/);
      const got = await submitAndClose(network, server, tx);
      expect(got.status).toBe('FAILED');
      expect(network.balance(account.publicKey(), 'USDC')).toBe('100');
    },
  );

  it(
    'when both keys of the multisig payer sign, sorted by ' + 'public key, the transfer simulates and applies',
    async () => {
      const { account, cosigner } = await multisigAccount();
      const tx = await transferFrom(account, { authSigners: [account, cosigner] });
      expect(rpc.Api.isSimulationSuccess(await server.simulateTransaction(tx))).toBe(true);
      expect((await submitAndClose(network, server, tx)).status).toBe('SUCCESS');
      expect(network.balance(account.publicKey(), 'USDC')).toBe('99.9');
    },
  );

  it('when the signatures are not sorted by public key, the host refuses them', async () => {
    const { account, cosigner } = await multisigAccount();
    const [first, second] = [account, cosigner].sort((a, b) => Buffer.compare(b.rawPublicKey(), a.rawPublicKey()));
    const tx = await transferFrom(account, {
      signAuth: (entry, expiration) =>
        signAuthEntry(entry, [first, second], expiration, network.networkPassphrase, true),
    });
    const sim = await server.simulateTransaction(tx);
    expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/public keys are not ordered/);
  });

  it(
    'when the master key is disabled (weight 0), its auth ' + 'signature is refused and the other signer authorizes',
    async () => {
      const { account, signer } = await disabledMasterAccount();
      const byMaster = await transferFrom(account, { authSigners: [account] });
      const sim = await server.simulateTransaction(byMaster);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/does not belong to account/);
      expect((await submitAndClose(network, server, byMaster)).status).toBe('FAILED');

      const bySigner = await transferFrom(account, { authSigners: [signer] });
      expect((await submitAndClose(network, server, bySigner)).status).toBe('SUCCESS');
      expect(network.balance(account.publicKey(), 'USDC')).toBe('99.9');
    },
  );

  it(
    'when the master key is disabled, a transaction signed by it is refused with txBadAuth and one signed by the ' +
      'signer is accepted',
    async () => {
      const { account, signer } = await disabledMasterAccount();
      const pay = Operation.payment({ destination: payee.publicKey(), asset: Asset.native(), amount: '1' });
      const refused = await classicTransaction(network, server, account.publicKey(), [account], [pay]);
      expect(refused.sent.status).toBe('ERROR');
      expect(resultCode(refused.sent.errorResult as xdr.TransactionResult)).toBe('txBadAuth');
      const accepted = await classicTransaction(network, server, account.publicKey(), [signer], [pay]);
      expect(accepted.final?.status).toBe('SUCCESS');
    },
  );

  it('when the high threshold is 2, a setOptions signed by one weight-1 key is refused with txBadAuth', async () => {
    const { account } = await multisigAccount();
    const { sent } = await classicTransaction(
      network,
      server,
      account.publicKey(),
      [account],
      [Operation.setOptions({ masterWeight: 5 })],
    );
    expect(sent.status).toBe('ERROR');
    expect(resultCode(sent.errorResult as xdr.TransactionResult)).toBe('txBadAuth');
  });
});
