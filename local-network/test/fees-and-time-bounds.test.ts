import {
  Asset,
  BASE_FEE,
  FeeBumpTransaction,
  Keypair,
  Operation,
  TransactionBuilder,
  rpc,
  xdr,
} from '@stellar/stellar-sdk';
import { LocalNetwork } from '../src';
import { formatAmount, toStroops } from '../src/amount';
import { buildTransfer, fundedAccount, resultCode, rpcClient, startTestNetwork, submitAndClose } from './helpers';

describe('fees (getFeeStats, surge pricing, fee bumps) and transaction time bounds', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let payer: Keypair;
  let payee: Keypair;

  beforeAll(async () => {
    network = await startTestNetwork();
    server = rpcClient(network);
    payer = await fundedAccount(network, '100');
    payee = await fundedAccount(network, '1');
  });
  afterEach(() => network.setMinimumInclusionFee(100));
  afterAll(() => network.stop());

  async function payment(
    source: Keypair,
    opts: {
      fee?: string;
      timebounds?: { minTime: number; maxTime: number };
      ledgerbounds?: { minLedger: number; maxLedger: number };
    } = {},
  ) {
    const builder = new TransactionBuilder(await server.getAccount(source.publicKey()), {
      fee: opts.fee ?? BASE_FEE,
      networkPassphrase: network.networkPassphrase,
      ...(opts.timebounds && { timebounds: opts.timebounds }),
      ...(opts.ledgerbounds && { ledgerbounds: opts.ledgerbounds }),
    }).addOperation(Operation.payment({ destination: payee.publicKey(), asset: Asset.native(), amount: '1' }));
    if (!opts.timebounds) builder.setTimeout(60);
    const tx = builder.build();
    tx.sign(source);
    return tx;
  }

  const paymentWith = (source: Keypair, opts: Parameters<typeof payment>[1]) => payment(source, opts);
  const xlm = (who: Keypair): bigint => toStroops(network.balance(who.publicKey(), 'XLM'));

  describe('getFeeStats', () => {
    it(
      'answers the real shape, and its Soroban distribution ' + 'reflects the inclusion fees recent transactions bid',
      async () => {
        const submitter = await fundedAccount(network, '0');
        const draft = await buildTransfer({
          network,
          server,
          submitter,
          from: payer.publicKey(),
          to: payee.publicKey(),
          amount: 1n,
          authSigner: payer,
        });
        const invoke = draft.operations[0] as Operation.InvokeHostFunction;
        const resourceFee = BigInt(draft.toEnvelope().v1().tx().ext().sorobanData().resourceFee().toString());
        const bid = new TransactionBuilder(await server.getAccount(submitter.publicKey()), {
          fee: '2500',
          networkPassphrase: network.networkPassphrase,
        })
          .setSorobanData(draft.toEnvelope().v1().tx().ext().sorobanData())
          .addOperation(Operation.invokeHostFunction({ func: invoke.func, auth: invoke.auth ?? [] }))
          .setTimeout(60)
          .build();
        expect(BigInt(bid.fee)).toBe(2500n + resourceFee);
        bid.sign(submitter);
        expect((await submitAndClose(network, server, bid)).status).toBe('SUCCESS');

        const stats = await server.getFeeStats();
        expect(stats.sorobanInclusionFee.max).toBe('2500');
        expect(stats.sorobanInclusionFee.min).toBe('2500');
        expect(Number(stats.sorobanInclusionFee.transactionCount)).toBe(1);
        expect(stats.inclusionFee.p50).toBe('100');
        expect(Object.keys(stats.inclusionFee).sort()).toEqual(
          [
            'ledgerCount',
            'max',
            'min',
            'mode',
            'p10',
            'p20',
            'p30',
            'p40',
            'p50',
            'p60',
            'p70',
            'p80',
            'p90',
            'p95',
            'p99',
            'transactionCount',
          ].sort(),
        );
        expect(stats.latestLedger).toBe(network.latestLedger());
      },
    );
  });

  describe('surge pricing', () => {
    it(
      'when the minimum inclusion fee is raised, a transaction bidding less is refused with txInsufficientFee ' +
        'naming the minimum, and getFeeStats shows it',
      async () => {
        const source = await fundedAccount(network, '0');
        network.setMinimumInclusionFee(500);
        const sent = await server.sendTransaction(await payment(source, { fee: '400' }));
        expect(sent.status).toBe('ERROR');
        const result = sent.errorResult as xdr.TransactionResult;
        expect(resultCode(result)).toBe('txInsufficientFee');
        expect(result.feeCharged().toString()).toBe('500');
        const stats = await server.getFeeStats();
        expect(stats.inclusionFee.p10).toBe('500');
        expect(Number(stats.sorobanInclusionFee.min)).toBeGreaterThanOrEqual(500);
      },
    );

    it('a transaction bidding above the surge minimum lands and is charged the minimum, not its bid', async () => {
      const source = await fundedAccount(network, '0');
      network.setMinimumInclusionFee(500);
      const before = xlm(source);
      const got = await submitAndClose(network, server, await payment(source, { fee: '800' }));
      expect(got.status).toBe('SUCCESS');
      expect(xlm(source)).toBe(before - 500n - toStroops('1'));
    });

    it(
      'a transaction accepted before a surge that outbids it waits ' + 'in the queue and lands when the surge is over',
      async () => {
        const source = await fundedAccount(network, '0');
        const tx = await payment(source, { fee: '200' });
        expect((await server.sendTransaction(tx)).status).toBe('PENDING');
        network.setMinimumInclusionFee(500);
        await network.closeLedger();
        expect((await server.getTransaction(tx.hash().toString('hex'))).status).toBe('NOT_FOUND');
        expect((await server.sendTransaction(tx)).status).toBe('DUPLICATE');
        network.setMinimumInclusionFee(100);
        await network.closeLedger();
        expect((await server.getTransaction(tx.hash().toString('hex'))).status).toBe('SUCCESS');
      },
    );
  });

  describe('fee bumps', () => {
    it(
      'a fee-bumped Soroban transfer from a channel account: the channel sequence is consumed, only the fee ' +
        'source pays the fee',
      async () => {
        const channel = await fundedAccount(network, '0');
        const feeSource = await fundedAccount(network, '0');
        const inner = await buildTransfer({
          network,
          server,
          submitter: channel,
          from: payer.publicKey(),
          to: payee.publicKey(),
          amount: 3_000_000n,
          authSigner: payer,
        });
        const bump = TransactionBuilder.buildFeeBumpTransaction(feeSource, '300', inner, network.networkPassphrase);
        bump.sign(feeSource);
        const [channelXlm, feeSourceXlm, payeeUsdc] = [
          xlm(channel),
          xlm(feeSource),
          network.balance(payee.publicKey(), 'USDC'),
        ];
        const channelSeq = BigInt((await server.getAccount(channel.publicKey())).sequenceNumber());

        const got = await submitAndClose(network, server, bump);
        expect(got.status).toBe('SUCCESS');
        if (got.status !== rpc.Api.GetTransactionStatus.SUCCESS) return;
        expect(got.feeBump).toBe(true);
        expect(resultCode(got.resultXdr)).toBe('txFeeBumpInnerSuccess');
        const resourceFee = BigInt(inner.toEnvelope().v1().tx().ext().sorobanData().resourceFee().toString());
        const charged = BigInt(got.resultXdr.feeCharged().toString());
        expect(charged).toBe(2n * 100n + resourceFee);
        expect(xlm(feeSource)).toBe(feeSourceXlm - charged);
        expect(xlm(channel)).toBe(channelXlm);
        expect(BigInt((await server.getAccount(channel.publicKey())).sequenceNumber())).toBe(channelSeq + 1n);
        expect(network.balance(payee.publicKey(), 'USDC')).toBe(formatAmount(toStroops(payeeUsdc) + 3_000_000n));
      },
    );

    it(
      'when the fee bump bids a lower inclusion fee rate than its inner transaction, it is refused with ' +
        'txInsufficientFee',
      async () => {
        const channel = await fundedAccount(network, '0');
        const feeSource = await fundedAccount(network, '0');
        const draft = await buildTransfer({
          network,
          server,
          submitter: channel,
          from: payer.publicKey(),
          to: payee.publicKey(),
          amount: 1n,
          authSigner: payer,
        });
        const invoke = draft.operations[0] as Operation.InvokeHostFunction;
        const sorobanData = draft.toEnvelope().v1().tx().ext().sorobanData();
        const inner = new TransactionBuilder(await server.getAccount(channel.publicKey()), {
          fee: '1000',
          networkPassphrase: network.networkPassphrase,
        })
          .setSorobanData(sorobanData)
          .addOperation(Operation.invokeHostFunction({ func: invoke.func, auth: invoke.auth ?? [] }))
          .setTimeout(60)
          .build();
        inner.sign(channel);
        // 2 x 600 < 1000 x 2: a rate of 600 per operation is below the inner transaction's 1000 (the SDK refuses to
        // build
        // it).
        const outerFee = 1200n + BigInt(sorobanData.resourceFee().toString());
        const envelope = xdr.TransactionEnvelope.envelopeTypeTxFeeBump(
          new xdr.FeeBumpTransactionEnvelope({
            tx: new xdr.FeeBumpTransaction({
              feeSource: xdr.MuxedAccount.keyTypeEd25519(feeSource.rawPublicKey()),
              fee: xdr.Int64.fromString(outerFee.toString()),
              innerTx: xdr.FeeBumpTransactionInnerTx.envelopeTypeTx(inner.toEnvelope().v1()),
              ext: new xdr.FeeBumpTransactionExt(0),
            }),
            signatures: [],
          }),
        );
        const bump = new FeeBumpTransaction(envelope, network.networkPassphrase);
        bump.sign(feeSource);
        const sent = await server.sendTransaction(bump);
        expect(sent.status).toBe('ERROR');
        expect(resultCode(sent.errorResult as xdr.TransactionResult)).toBe('txInsufficientFee');
      },
    );

    it('when the fee source did not sign the fee bump, it is refused with txBadAuth', async () => {
      const channel = await fundedAccount(network, '0');
      const feeSource = await fundedAccount(network, '0');
      const inner = await buildTransfer({
        network,
        server,
        submitter: channel,
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 1n,
        authSigner: payer,
      });
      const bump = TransactionBuilder.buildFeeBumpTransaction(feeSource, '300', inner, network.networkPassphrase);
      bump.sign(channel);
      const sent = await server.sendTransaction(bump);
      expect(sent.status).toBe('ERROR');
      expect(resultCode(sent.errorResult as xdr.TransactionResult)).toBe('txBadAuth');
    });
  });

  describe('time bounds', () => {
    it(
      "when the ledger closes after a queued transaction's maxTime, it is dropped: never included, NOT_FOUND, no " +
        'fee, no sequence used',
      async () => {
        const source = await fundedAccount(network, '0');
        const now = Math.floor(Date.now() / 1000);
        const tx = await payment(source, { timebounds: { minTime: 0, maxTime: now + 30 } });
        const seq = (await server.getAccount(source.publicKey())).sequenceNumber();
        const before = xlm(source);
        expect((await server.sendTransaction(tx)).status).toBe('PENDING');
        network.advanceClock(120);
        await network.closeLedger();
        await network.closeLedger();
        const got = await server.getTransaction(tx.hash().toString('hex'));
        expect(got.status).toBe('NOT_FOUND');
        expect((await server.getAccount(source.publicKey())).sequenceNumber()).toBe(seq);
        expect(xlm(source)).toBe(before);
        const again = await server.sendTransaction(tx);
        expect(again.status).toBe('ERROR');
        expect(resultCode(again.errorResult as xdr.TransactionResult)).toBe('txTooLate');
      },
    );

    it('a transaction whose minTime is in the future is refused with txTooEarly', async () => {
      const source = await fundedAccount(network, '0');
      const now = Math.floor(Date.now() / 1000) + 3600;
      const sent = await server.sendTransaction(
        await payment(source, { timebounds: { minTime: now + 600, maxTime: now + 900 } }),
      );
      expect(sent.status).toBe('ERROR');
      expect(resultCode(sent.errorResult as xdr.TransactionResult)).toBe('txTooEarly');
    });

    it(
      'ledger bounds: maxLedger is exclusive (txTooLate at it), ' + 'minLedger above the next ledger is txTooEarly',
      async () => {
        const source = await fundedAccount(network, '0');
        const payment = (s: Keypair, o: { ledgerbounds: { minLedger: number; maxLedger: number } }) =>
          paymentWith(s, { ...o, timebounds: { minTime: 0, maxTime: 0 } });
        const next = network.latestLedger() + 1;
        const late = await server.sendTransaction(
          await payment(source, { ledgerbounds: { minLedger: 0, maxLedger: next } }),
        );
        expect(resultCode(late.errorResult as xdr.TransactionResult)).toBe('txTooLate');
        const early = await server.sendTransaction(
          await payment(source, { ledgerbounds: { minLedger: next + 5, maxLedger: 0 } }),
        );
        expect(resultCode(early.errorResult as xdr.TransactionResult)).toBe('txTooEarly');
        const inWindow = await submitAndClose(
          network,
          server,
          await payment(source, { ledgerbounds: { minLedger: next, maxLedger: next + 1 } }),
        );
        expect(inWindow.status).toBe('SUCCESS');
      },
    );
  });
});
