import { Account, Asset, BASE_FEE, Keypair, Operation, TransactionBuilder, rpc, xdr } from '@stellar/stellar-sdk';
import { LocalNetwork } from '../src';
import { formatAmount, toStroops } from '../src/amount';
import { buildTransfer, fundedAccount, resultCode, rpcClient, startTestNetwork, submitAndClose } from './helpers';

/** The operation result of a failed transaction whose single operation was an InvokeHostFunction. */
function hostFunctionResult(result: xdr.TransactionResult): string {
  return result.result().results()[0].tr().invokeHostFunctionResult().switch().name;
}

describe('ledger rules of the local network', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let payer: Keypair;
  let payee: Keypair;
  let submitter: Keypair;

  beforeAll(async () => {
    network = await startTestNetwork();
    server = rpcClient(network);
    payer = await fundedAccount(network, '100');
    payee = await fundedAccount(network, '1');
  });

  beforeEach(async () => {
    submitter = await fundedAccount(network, '0');
  });

  afterAll(() => network.stop());

  const transfer = (amount: bigint, extra: Partial<Parameters<typeof buildTransfer>[0]> = {}) =>
    buildTransfer({
      network,
      server,
      submitter,
      from: payer.publicKey(),
      to: payee.publicKey(),
      amount,
      authSigner: payer,
      ...extra,
    });

  async function seqOf(account: Keypair): Promise<string> {
    return (await server.getAccount(account.publicKey())).sequenceNumber();
  }

  describe('Soroban authorization', () => {
    it(
      'when the auth entry is signed by another key, simulation fails and the submitted transfer fails with its ' +
        'sequence consumed and fee charged',
      async () => {
        const tx = await transfer(1_000_000n, { authSigner: Keypair.random() });
        const sim = await server.simulateTransaction(tx);
        expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(
          /Error\(Auth, InvalidAction\)[\s\S]*is not a signer of/,
        );

        const seqBefore = await seqOf(submitter);
        const xlmBefore = network.balance(submitter.publicKey(), 'XLM');
        const got = await submitAndClose(network, server, tx);
        expect(got.status).toBe('FAILED');
        if (got.status !== rpc.Api.GetTransactionStatus.FAILED) return;
        expect(resultCode(got.resultXdr)).toBe('txFailed');
        expect(hostFunctionResult(got.resultXdr)).toBe('invokeHostFunctionTrapped');
        expect(BigInt(await seqOf(submitter))).toBe(BigInt(seqBefore) + 1n);
        const fee = BigInt(got.resultXdr.feeCharged().toString());
        expect(fee).toBeGreaterThan(100n);
        expect(network.balance(submitter.publicKey(), 'XLM')).toBe(formatAmount(toStroops(xlmBefore) - fee));
        expect(network.balance(payer.publicKey(), 'USDC')).toBe('100');
      },
    );

    it('when the signature bytes are forged for the payer key, the ed25519 check fails', async () => {
      const tx = await transfer(1n);
      const op = tx.operations[0] as Operation.InvokeHostFunction;
      const entry = (op.auth ?? [])[0];
      const fields = entry.credentials().address().signature().vec()?.[0].map() ?? [];
      fields
        .filter((f) => f.key().sym().toString() === 'signature')
        .forEach((f) => f.val(xdr.ScVal.scvBytes(Buffer.alloc(64, 7))));
      const forged = new TransactionBuilder(await server.getAccount(submitter.publicKey()), {
        fee: BASE_FEE,
        networkPassphrase: network.networkPassphrase,
      })
        .setSorobanData(tx.toEnvelope().v1().tx().ext().sorobanData())
        .addOperation(Operation.invokeHostFunction({ func: op.func, auth: [entry] }))
        .setTimeout(60)
        .build();
      const sim = await server.simulateTransaction(forged);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(
        /Error\(Crypto, InvalidInput\)[\s\S]*does not verify/,
      );
    });

    it('when the auth nonce was already used, the transfer fails', async () => {
      const first = await transfer(1_000_000n);
      expect((await submitAndClose(network, server, first)).status).toBe('SUCCESS');
      const replayAuth = (first.operations[0] as Operation.InvokeHostFunction).auth ?? [];
      const other = await fundedAccount(network, '0');
      const account = await server.getAccount(other.publicKey());
      const replay = new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: network.networkPassphrase })
        .setSorobanData(first.toEnvelope().v1().tx().ext().sorobanData())
        .addOperation(
          Operation.invokeHostFunction({
            func: (first.operations[0] as Operation.InvokeHostFunction).func,
            auth: replayAuth,
          }),
        )
        .setTimeout(60)
        .build();
      replay.sign(other);
      const sim = await server.simulateTransaction(replay);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/Error\(Auth, ExistingValue\)[\s\S]*already used/);
      const got = await submitAndClose(network, server, replay);
      expect(got.status).toBe('FAILED');
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('99.9');
    });

    it('when the authorization expiration ledger is before the current ledger, the transfer fails', async () => {
      const tx = await transfer(1_000_000n, { expiration: network.latestLedger() + 1 });
      await network.closeLedger();
      const sim = await server.simulateTransaction(tx);
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/signature has expired/);
      const got = await submitAndClose(network, server, tx);
      expect(got.status).toBe('FAILED');
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('99.9');
    });

    it(
      'when the transfer is from the transaction source, ' + 'source-account credentials need no extra signature',
      async () => {
        const got = await submitAndClose(
          network,
          server,
          await buildTransfer({
            network,
            server,
            submitter: payer,
            from: payer.publicKey(),
            to: payee.publicKey(),
            amount: 5_000_000n,
          }),
        );
        expect(got.status).toBe('SUCCESS');
        expect(network.balance(payer.publicKey(), 'USDC')).toBe('99.4');
      },
    );

    it('when the auth entry is missing altogether, the transfer fails as unauthorized', async () => {
      const signed = await transfer(1n);
      const bare = TransactionBuilder.cloneFrom(signed, {
        fee: String(
          Number(signed.fee) - Number(signed.toEnvelope().v1().tx().ext().sorobanData().resourceFee().toString()),
        ),
        sorobanData: signed.toEnvelope().v1().tx().ext().sorobanData(),
      })
        .clearOperations()
        .addOperation(
          Operation.invokeHostFunction({ func: (signed.operations[0] as Operation.InvokeHostFunction).func, auth: [] }),
        )
        .build();
      const sim = await server.simulateTransaction(bare, undefined, 'enforce');
      expect(rpc.Api.isSimulationError(sim) && sim.error).toMatch(/Error\(Auth, InvalidAction\)/);
    });
  });

  describe('balances and trustlines', () => {
    it(
      'when the recipient has no trustline, the transfer fails (SAC) and the payment fails with paymentNoTrust ' +
        '(classic)',
      async () => {
        const stranger = Keypair.random();
        await network.fundAccount(stranger.publicKey());
        await expect(transfer(1n, { to: stranger.publicKey() })).rejects.toThrow(
          /Error\(Contract, #13\)[\s\S]*trustline entry is missing/,
        );

        const account = await server.getAccount(payer.publicKey());
        const pay = new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: network.networkPassphrase })
          .addOperation(
            Operation.payment({
              destination: stranger.publicKey(),
              asset: new Asset('USDC', network.assets[0].issuer),
              amount: '1',
            }),
          )
          .setTimeout(30)
          .build();
        pay.sign(payer);
        const got = await submitAndClose(network, server, pay);
        expect(got.status).toBe('FAILED');
        if (got.status !== rpc.Api.GetTransactionStatus.FAILED) return;
        expect(got.resultXdr.result().results()[0].tr().paymentResult().switch().name).toBe('paymentNoTrust');
      },
    );

    it('when the payer has less than the amount, the transfer fails with a balance error', async () => {
      await expect(transfer(100_000_000_000n)).rejects.toThrow(/Error\(Contract, #10\)/);
    });

    it('a wallet flow works: createAccount, changeTrust, then classic XLM and USDC payments', async () => {
      const fresh = Keypair.random();
      const usdc = new Asset('USDC', network.assets[0].issuer);
      const create = new TransactionBuilder(await server.getAccount(payer.publicKey()), {
        fee: BASE_FEE,
        networkPassphrase: network.networkPassphrase,
      })
        .addOperation(Operation.createAccount({ destination: fresh.publicKey(), startingBalance: '5' }))
        .setTimeout(30)
        .build();
      create.sign(payer);
      expect((await submitAndClose(network, server, create)).status).toBe('SUCCESS');

      const trust = new TransactionBuilder(await server.getAccount(fresh.publicKey()), {
        fee: BASE_FEE,
        networkPassphrase: network.networkPassphrase,
      })
        .addOperation(Operation.changeTrust({ asset: usdc }))
        .setTimeout(30)
        .build();
      trust.sign(fresh);
      expect((await submitAndClose(network, server, trust)).status).toBe('SUCCESS');
      expect(network.hasTrustline(fresh.publicKey(), 'USDC')).toBe(true);

      const pay = new TransactionBuilder(await server.getAccount(payer.publicKey()), {
        fee: BASE_FEE,
        networkPassphrase: network.networkPassphrase,
      })
        .addOperation(Operation.payment({ destination: fresh.publicKey(), asset: usdc, amount: '2.5' }))
        .addOperation(Operation.payment({ destination: fresh.publicKey(), asset: Asset.native(), amount: '1' }))
        .setTimeout(30)
        .build();
      pay.sign(payer);
      expect((await submitAndClose(network, server, pay)).status).toBe('SUCCESS');
      expect(network.balance(fresh.publicKey(), 'USDC')).toBe('2.5');
      expect(network.balance(fresh.publicKey(), 'XLM')).toBe('5.99999');
    });
  });

  describe('transaction admission', () => {
    it('when the sequence number is not current + 1, sendTransaction answers ERROR with txBadSeq', async () => {
      const account = await server.getAccount(submitter.publicKey());
      const tx = new TransactionBuilder(
        new Account(submitter.publicKey(), (BigInt(account.sequenceNumber()) + 5n).toString()),
        { fee: BASE_FEE, networkPassphrase: network.networkPassphrase },
      )
        .addOperation(Operation.payment({ destination: payee.publicKey(), asset: Asset.native(), amount: '1' }))
        .setTimeout(30)
        .build();
      tx.sign(submitter);
      const sent = await server.sendTransaction(tx);
      expect(sent.status).toBe('ERROR');
      expect(sent.errorResult && resultCode(sent.errorResult)).toBe('txBadSeq');
    });

    it(
      'unsigned, underpaid, expired and sourceless transactions are refused with txBadAuth, txInsufficientFee, ' +
        'txTooLate and txNoAccount',
      async () => {
        const account = () => server.getAccount(submitter.publicKey());
        const payment = Operation.payment({ destination: payee.publicKey(), asset: Asset.native(), amount: '1' });
        const unsigned = new TransactionBuilder(await account(), {
          fee: BASE_FEE,
          networkPassphrase: network.networkPassphrase,
        })
          .addOperation(payment)
          .setTimeout(30)
          .build();
        const underpaid = new TransactionBuilder(await account(), {
          fee: '99',
          networkPassphrase: network.networkPassphrase,
        })
          .addOperation(payment)
          .setTimeout(30)
          .build();
        underpaid.sign(submitter);
        const expired = new TransactionBuilder(await account(), {
          fee: BASE_FEE,
          networkPassphrase: network.networkPassphrase,
          timebounds: { minTime: 0, maxTime: 1_000 },
        })
          .addOperation(payment)
          .build();
        expired.sign(submitter);
        const nobody = Keypair.random();
        const sourceless = new TransactionBuilder(new Account(nobody.publicKey(), '1'), {
          fee: BASE_FEE,
          networkPassphrase: network.networkPassphrase,
        })
          .addOperation(payment)
          .setTimeout(30)
          .build();
        sourceless.sign(nobody);
        const codes = [];
        for (const tx of [unsigned, underpaid, expired, sourceless]) {
          const sent = await server.sendTransaction(tx);
          expect(sent.status).toBe('ERROR');
          codes.push(sent.errorResult && resultCode(sent.errorResult));
        }
        expect(codes).toEqual(['txBadAuth', 'txInsufficientFee', 'txTooLate', 'txNoAccount']);
      },
    );

    it(
      'a second transaction from one source account in the same ledger gets TRY_AGAIN_LATER; resending the first ' +
        'gets DUPLICATE',
      async () => {
        const account = await server.getAccount(submitter.publicKey());
        const build = (acct: Account) => {
          const tx = new TransactionBuilder(acct, { fee: BASE_FEE, networkPassphrase: network.networkPassphrase })
            .addOperation(Operation.payment({ destination: payee.publicKey(), asset: Asset.native(), amount: '1' }))
            .setTimeout(30)
            .build();
          tx.sign(submitter);
          return tx;
        };
        const first = build(account);
        const second = build(account);
        expect((await server.sendTransaction(first)).status).toBe('PENDING');
        expect((await server.sendTransaction(second)).status).toBe('TRY_AGAIN_LATER');
        expect((await server.sendTransaction(first)).status).toBe('DUPLICATE');
        await network.closeLedger();
        expect((await server.getTransaction(first.hash().toString('hex'))).status).toBe('SUCCESS');
        expect((await server.sendTransaction(build(await server.getAccount(submitter.publicKey())))).status).toBe(
          'PENDING',
        );
        await network.closeLedger();
      },
    );

    it(
      'a fee-bump transaction is accepted: the inner source ' + 'sequence is consumed and the outer fee source pays',
      async () => {
        const sponsor = await fundedAccount(network, '0');
        const inner = await transfer(2_000_000n);
        const feeBump = TransactionBuilder.buildFeeBumpTransaction(
          sponsor,
          String(Number(inner.fee) + 200),
          inner,
          network.networkPassphrase,
        );
        feeBump.sign(sponsor);
        const submitterXlm = network.balance(submitter.publicKey(), 'XLM');
        const sponsorXlm = network.balance(sponsor.publicKey(), 'XLM');
        const seqBefore = await seqOf(submitter);
        const got = await submitAndClose(network, server, feeBump);
        expect(got.status).toBe('SUCCESS');
        if (got.status !== rpc.Api.GetTransactionStatus.SUCCESS) return;
        expect(got.feeBump).toBe(true);
        expect(resultCode(got.resultXdr)).toBe('txFeeBumpInnerSuccess');
        expect(BigInt(await seqOf(submitter))).toBe(BigInt(seqBefore) + 1n);
        expect(network.balance(submitter.publicKey(), 'XLM')).toBe(submitterXlm);
        expect(Number(network.balance(sponsor.publicKey(), 'XLM'))).toBeLessThan(Number(sponsorXlm));
        expect(network.balance(payee.publicKey(), 'USDC')).toBe('1.8');
      },
    );
  });
});
