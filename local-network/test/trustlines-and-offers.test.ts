import { Asset, Keypair, Operation, rpc, scValToNative, xdr } from '@stellar/stellar-sdk';
import { LocalNetwork } from '../src';
import {
  buildTransfer,
  classicTransaction,
  fundedAccount,
  rpcClient,
  startTestNetwork,
  submitAndClose,
} from './helpers';

/** The trustline entry as getLedgerEntries serves it. */
async function trustlineEntry(server: rpc.Server, accountId: string, asset: Asset): Promise<xdr.TrustLineEntry> {
  const key = xdr.LedgerKey.trustline(
    new xdr.LedgerKeyTrustLine({
      accountId: Keypair.fromPublicKey(accountId).xdrAccountId(),
      asset: asset.toTrustLineXDRObject(),
    }),
  );
  const { entries } = await server.getLedgerEntries(key);
  return entries[0].val.trustLine();
}

const simulationError = (sim: rpc.Api.SimulateTransactionResponse): string =>
  rpc.Api.isSimulationError(sim) ? sim.error : 'simulation succeeded';
const operationResult = (result: xdr.TransactionResult): xdr.OperationResultTr => result.result().results()[0].tr();

describe('frozen trustlines and selling liabilities', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let usdc: Asset;
  let eurc: Asset;
  let eurcIssuer: Keypair;

  beforeAll(async () => {
    network = await startTestNetwork({ assets: [{ code: 'USDC' }, { code: 'EURC' }] });
    server = rpcClient(network);
    const asset = (code: string) => network.assets.find((a) => a.code === code)!;
    usdc = new Asset('USDC', asset('USDC').issuer);
    eurc = new Asset('EURC', asset('EURC').issuer);
    eurcIssuer = Keypair.fromSecret(network.issuerSecret('EURC')!);
  });
  afterAll(() => network.stop());

  async function transfer(from: Keypair, to: string, amount: bigint, asset = 'USDC') {
    return buildTransfer({
      network,
      server,
      submitter: await fundedAccount(network, '0'),
      from: from.publicKey(),
      to,
      amount,
      asset,
      authSigner: from,
    });
  }

  describe('frozen trustlines', () => {
    it(
      "when the issuer freezes the payer's USDC trustline, a SAC transfer from it fails in simulation and apply " +
        '(Error(Contract, #11))',
      async () => {
        const payer = await fundedAccount(network, '10');
        const payee = await fundedAccount(network, '1');
        const tx = await transfer(payer, payee.publicKey(), 10_000_000n);
        await network.setTrustlineAuthorized(payer.publicKey(), 'USDC', false);
        expect((await trustlineEntry(server, payer.publicKey(), usdc)).flags()).toBe(0);
        expect(simulationError(await server.simulateTransaction(tx))).toMatch(
          /Error\(Contract, #11\)[\s\S]*not authorized/,
        );
        expect((await submitAndClose(network, server, tx)).status).toBe('FAILED');
        expect(network.balance(payer.publicKey(), 'USDC')).toBe('10');
        expect(network.balance(payee.publicKey(), 'USDC')).toBe('1');

        await network.setTrustlineAuthorized(payer.publicKey(), 'USDC', true);
        expect(
          (await submitAndClose(network, server, await transfer(payer, payee.publicKey(), 10_000_000n))).status,
        ).toBe('SUCCESS');
      },
    );

    it("when the payee's trustline is frozen, a SAC transfer to it fails", async () => {
      const payer = await fundedAccount(network, '10');
      const payee = await fundedAccount(network, '1');
      const tx = await transfer(payer, payee.publicKey(), 1n);
      await network.setTrustlineAuthorized(payee.publicKey(), 'USDC', false);
      expect(simulationError(await server.simulateTransaction(tx))).toMatch(/Error\(Contract, #11\)/);
      expect((await submitAndClose(network, server, tx)).status).toBe('FAILED');
      expect(network.balance(payer.publicKey(), 'USDC')).toBe('10');
    });

    it(
      'a real setTrustLineFlags transaction by the issuer freezes the line: classic payments answer ' +
        'paymentSrcNotAuthorized, SAC transfers fail',
      async () => {
        const holder = await fundedAccount(network, '0');
        await network.faucet(holder.publicKey(), 'EURC', '5');
        const other = await fundedAccount(network, '0');
        await network.faucet(other.publicKey(), 'EURC', '1');
        const sacTransfer = await transfer(holder, other.publicKey(), 1n, 'EURC');
        const { final } = await classicTransaction(
          network,
          server,
          eurcIssuer.publicKey(),
          [eurcIssuer],
          [Operation.setTrustLineFlags({ trustor: holder.publicKey(), asset: eurc, flags: { authorized: false } })],
        );
        expect(final?.status).toBe('SUCCESS');
        expect((await trustlineEntry(server, holder.publicKey(), eurc)).flags()).toBe(0);
        if (final?.status !== rpc.Api.GetTransactionStatus.SUCCESS) return;
        const eurcContract = network.assets.find((a) => a.code === 'EURC')!.contractId;
        const { events } = await server.getEvents({
          startLedger: final.ledger,
          filters: [{ type: 'contract', contractIds: [eurcContract] }],
        });
        const setAuthorized = events.find((e) => e.txHash === final.txHash)!;
        expect(setAuthorized.topic.map((t) => scValToNative(t))).toEqual([
          'set_authorized',
          holder.publicKey(),
          eurc.toString(),
        ]);
        expect(scValToNative(setAuthorized.value)).toBe(false);

        const pay = await classicTransaction(
          network,
          server,
          holder.publicKey(),
          [holder],
          [Operation.payment({ destination: other.publicKey(), asset: eurc, amount: '1' })],
        );
        expect(pay.final?.status).toBe('FAILED');
        if (pay.final?.status !== rpc.Api.GetTransactionStatus.FAILED) return;
        expect(operationResult(pay.final.resultXdr).paymentResult().switch().name).toBe('paymentSrcNotAuthorized');
        expect(simulationError(await server.simulateTransaction(sacTransfer))).toMatch(/Error\(Contract, #11\)/);
        expect(network.balance(holder.publicKey(), 'EURC')).toBe('5');
      },
    );

    it('when the issuer lacks AUTH_REVOCABLE, allowTrust cannot revoke (allowTrustCantRevoke)', async () => {
      const holder = await fundedAccount(network, '0');
      await network.faucet(holder.publicKey(), 'EURC', '1');
      const issuer = eurcIssuer.publicKey();
      await classicTransaction(network, server, issuer, [eurcIssuer], [Operation.setOptions({ clearFlags: 2 })]);
      try {
        const { final } = await classicTransaction(
          network,
          server,
          issuer,
          [eurcIssuer],
          [Operation.allowTrust({ trustor: holder.publicKey(), assetCode: 'EURC', authorize: 0 })],
        );
        expect(final?.status).toBe('FAILED');
        if (final?.status !== rpc.Api.GetTransactionStatus.FAILED) return;
        expect(operationResult(final.resultXdr).allowTrustResult().switch().name).toBe('allowTrustCantRevoke');
      } finally {
        await classicTransaction(network, server, issuer, [eurcIssuer], [Operation.setOptions({ setFlags: 2 })]);
      }
    });
  });

  describe('CAP-67 events of SAC transfers involving the issuer', () => {
    it('a SAC transfer from the issuer emits mint ["mint", to, asset] and one to the issuer emits burn', async () => {
      const holder = await fundedAccount(network, '0');
      await network.faucet(holder.publicKey(), 'EURC', '3');
      const minted = await buildTransfer({
        network,
        server,
        submitter: eurcIssuer,
        from: eurcIssuer.publicKey(),
        to: holder.publicKey(),
        amount: 10_000_000n,
        asset: 'EURC',
      });
      const burned = await transfer(holder, eurcIssuer.publicKey(), 10_000_000n, 'EURC');
      const contractEvent = async (tx: typeof minted) => {
        const sim = await server.simulateTransaction(tx);
        if (!rpc.Api.isSimulationSuccess(sim)) throw new Error(sim.error);
        const event = sim.events.map((e) => e.event()).find((e) => e.type().name === 'contract')!;
        return [
          ...event
            .body()
            .v0()
            .topics()
            .map((t) => scValToNative(t)),
          scValToNative(event.body().v0().data()),
        ];
      };
      expect(await contractEvent(minted)).toEqual(['mint', holder.publicKey(), eurc.toString(), 10_000_000n]);
      expect(await contractEvent(burned)).toEqual(['burn', holder.publicKey(), eurc.toString(), 10_000_000n]);
    });
  });

  describe('issuer with AUTH_REQUIRED', () => {
    it(
      "a new trustline starts unauthorized: the issuer's payment fails with paymentNotAuthorized until it " +
        'authorizes the line',
      async () => {
        const issuer = eurcIssuer.publicKey();
        await classicTransaction(network, server, issuer, [eurcIssuer], [Operation.setOptions({ setFlags: 1 })]);
        try {
          const holder = await fundedAccount(network, '0');
          expect(
            (
              await classicTransaction(
                network,
                server,
                holder.publicKey(),
                [holder],
                [Operation.changeTrust({ asset: eurc })],
              )
            ).final?.status,
          ).toBe('SUCCESS');
          expect((await trustlineEntry(server, holder.publicKey(), eurc)).flags()).toBe(0);
          const pay = () =>
            classicTransaction(
              network,
              server,
              issuer,
              [eurcIssuer],
              [Operation.payment({ destination: holder.publicKey(), asset: eurc, amount: '2' })],
            );
          const refused = await pay();
          expect(refused.final?.status).toBe('FAILED');
          if (refused.final?.status !== rpc.Api.GetTransactionStatus.FAILED) return;
          expect(operationResult(refused.final.resultXdr).paymentResult().switch().name).toBe('paymentNotAuthorized');
          await classicTransaction(
            network,
            server,
            issuer,
            [eurcIssuer],
            [Operation.setTrustLineFlags({ trustor: holder.publicKey(), asset: eurc, flags: { authorized: true } })],
          );
          expect((await pay()).final?.status).toBe('SUCCESS');
          expect(network.balance(holder.publicKey(), 'EURC')).toBe('2');
        } finally {
          await classicTransaction(network, server, issuer, [eurcIssuer], [Operation.setOptions({ clearFlags: 1 })]);
        }
      },
    );
  });

  describe('selling liabilities', () => {
    async function sellOffer(seller: Keypair, amount: string, offerId = '0') {
      const { final } = await classicTransaction(
        network,
        server,
        seller.publicKey(),
        [seller],
        [Operation.manageSellOffer({ selling: usdc, buying: Asset.native(), amount, price: '2', offerId })],
      );
      expect(final?.status).toBe('SUCCESS');
      if (final?.status !== rpc.Api.GetTransactionStatus.SUCCESS) throw new Error('offer failed');
      return operationResult(final.resultXdr).manageSellOfferResult().success().offer();
    }

    it(
      'a resting sell offer locks its amount: a SAC transfer above balance - selling liabilities fails, one ' +
        'within it lands',
      async () => {
        const seller = await fundedAccount(network, '100');
        const payee = await fundedAccount(network, '1');
        const tooMuch = await transfer(seller, payee.publicKey(), 210_000_000n);
        const offer = await sellOffer(seller, '80');
        expect(offer.switch().name).toBe('manageOfferCreated');
        const line = await trustlineEntry(server, seller.publicKey(), usdc);
        expect(line.ext().v1().liabilities().selling().toString()).toBe('800000000');
        const account = (
          await server.getLedgerEntries(
            xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId: seller.xdrAccountId() })),
          )
        ).entries[0].val.account();
        expect(account.ext().v1().liabilities().buying().toString()).toBe('1600000000');

        expect(simulationError(await server.simulateTransaction(tooMuch))).toMatch(/Error\(Contract, #10\)/);
        expect((await submitAndClose(network, server, tooMuch)).status).toBe('FAILED');
        expect(
          (await submitAndClose(network, server, await transfer(seller, payee.publicKey(), 200_000_000n))).status,
        ).toBe('SUCCESS');
        expect(network.balance(seller.publicKey(), 'USDC')).toBe('80');
      },
    );

    it('deleting the offer (amount 0) frees the liabilities and the balance is spendable again', async () => {
      const seller = await fundedAccount(network, '100');
      const payee = await fundedAccount(network, '1');
      const locked = await transfer(seller, payee.publicKey(), 500_000_000n);
      const created = await sellOffer(seller, '90');
      const offerId = created.offer().offerId().toString();
      expect(simulationError(await server.simulateTransaction(locked))).toMatch(/Error\(Contract, #10\)/);
      expect((await sellOffer(seller, '0', offerId)).switch().name).toBe('manageOfferDeleted');
      expect((await trustlineEntry(server, seller.publicKey(), usdc)).ext().switch()).toBe(0);
      expect((await submitAndClose(network, server, locked)).status).toBe('SUCCESS');
    });

    it('an offer for more than the available balance rests with the available amount only', async () => {
      const seller = await fundedAccount(network, '10');
      const created = await sellOffer(seller, '25');
      expect(created.offer().amount().toString()).toBe('100000000');
    });

    it(
      "revoking the seller's trustline authorization deletes its " + 'offers in that asset and frees the liabilities',
      async () => {
        const seller = await fundedAccount(network, '0');
        await network.faucet(seller.publicKey(), 'EURC', '10');
        const { final } = await classicTransaction(
          network,
          server,
          seller.publicKey(),
          [seller],
          [Operation.manageSellOffer({ selling: eurc, buying: Asset.native(), amount: '10', price: '1' })],
        );
        expect(final?.status).toBe('SUCCESS');
        if (final?.status !== rpc.Api.GetTransactionStatus.SUCCESS) return;
        const offerId = operationResult(final.resultXdr).manageSellOfferResult().success().offer().offer().offerId();
        const offerKey = xdr.LedgerKey.offer(new xdr.LedgerKeyOffer({ sellerId: seller.xdrAccountId(), offerId }));
        expect((await server.getLedgerEntries(offerKey)).entries).toHaveLength(1);
        await network.setTrustlineAuthorized(seller.publicKey(), 'EURC', false);
        expect((await server.getLedgerEntries(offerKey)).entries).toHaveLength(0);
        const line = await trustlineEntry(server, seller.publicKey(), eurc);
        expect(line.ext().switch()).toBe(0);
        expect(line.flags()).toBe(0);
      },
    );
  });
});
