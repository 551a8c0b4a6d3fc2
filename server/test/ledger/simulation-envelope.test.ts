/**
 * Verify's simulation without the SDK's builder and full parse (issue #31): the envelope built straight in XDR
 * (server/src/ledger/simulation-envelope.ts) is the one `TransactionBuilder` builds, and the answer read for the rules
 * (server/src/ledger/simulation-answer.ts) holds what the SDK's full parse gives the rules, against the real local
 * network.
 */
import { Account, BASE_FEE, Keypair, Operation, TransactionBuilder, rpc, xdr } from '@stellar/stellar-sdk';
import type { Transaction } from '@stellar/stellar-sdk';
import type { LocalNetwork } from '@paid-api-marketplace/local-network';
import { jsonRpcClient } from '../../src/ledger/json-rpc-client';
import { SorobanRpc } from '../../src/ledger/soroban-rpc';
import { simulationEnvelopeXdr } from '../../src/ledger/simulation-envelope';
import { simulationForRules } from '../../src/ledger/simulation-answer';
import { buildTransfer, fundedAccount, rpcClient, startTestNetwork } from '../../../local-network/test/helpers';

function invocation(tx: Transaction): { func: xdr.HostFunction; auth: xdr.SorobanAuthorizationEntry[] } {
  const op = tx.operations[0] as Operation.InvokeHostFunction;
  return { func: op.func, auth: op.auth ?? [] };
}

describe("verify's simulation request and answer", () => {
  let network: LocalNetwork;
  let payer: Keypair;
  let payTo: Keypair;
  let source: Keypair;
  beforeAll(async () => {
    network = await startTestNetwork();
    [payer, payTo, source] = await Promise.all([
      fundedAccount(network, '5'),
      fundedAccount(network),
      fundedAccount(network, '0'),
    ]);
  });
  afterAll(() => network.stop());

  async function signedTransfer(signer: Keypair = payer): Promise<Transaction> {
    return buildTransfer({
      network,
      server: rpcClient(network),
      submitter: source,
      from: payer.publicKey(),
      to: payTo.publicKey(),
      amount: 10_000n,
      authSigner: signer,
    });
  }

  it('the envelope built in XDR is byte for byte what TransactionBuilder builds from Account(source, 0)', async () => {
    const { func, auth } = invocation(await signedTransfer());
    const now = Math.floor(Date.now() / 1000);
    const built = new TransactionBuilder(new Account(source.publicKey(), '0'), {
      fee: BASE_FEE,
      networkPassphrase: network.networkPassphrase,
      timebounds: { minTime: 0, maxTime: now + 30 },
    })
      .addOperation(Operation.invokeHostFunction({ func, auth }))
      .build();
    expect(simulationEnvelopeXdr(source.publicKey(), func, auth, 30, now)).toBe(built.toXDR());
  });

  it.each([
    ['a valid transfer', false],
    ['a transfer signed by a stranger', true],
  ])(
    'for %s, the answer read for the rules has the SDK full parse latest ledger, error and contract events',
    async (_name, stranger) => {
      const { func, auth } = invocation(await signedTransfer(stranger ? Keypair.random() : payer));
      const ledgerRpc = new SorobanRpc(jsonRpcClient(network.rpcUrl), 5000);
      const raw = await ledgerRpc.simulateRaw(simulationEnvelopeXdr(source.publicKey(), func, auth, 30), 'enforce');
      const full = rpc.parseRawSimulation(raw);
      const read = simulationForRules(raw);
      expect(read.latestLedger).toBe(full.latestLedger);
      expect(read.error).toBe(rpc.Api.isSimulationError(full) ? full.error : null);
      const contract = (full.events ?? []).filter((e) => e.event().type().name === 'contract');
      expect(read.events.map((e) => e.toXDR('base64'))).toEqual(contract.map((e) => e.toXDR('base64')));
      expect((raw.events ?? []).length).toBeGreaterThan(read.events.length); // diagnostic events skipped
      if (stranger) expect(read.error).toMatch(/Auth|Crypto/);
      else {
        expect(read.error).toBeNull();
        expect(read.events).toHaveLength(1);
        expect(read.minResourceFee).toBe(BigInt(raw.minResourceFee ?? '-1'));
      }
    },
  );
});
