import { Keypair, rpc, xdr } from '@stellar/stellar-sdk';
import { LocalNetwork } from '../src';
import { buildTransfer, fundedAccount, resultCode, rpcClient, startTestNetwork, submitAndClose } from './helpers';

/**
 * The 'pubnet' fee profile (issue #30, local convenience): the local network reproduces pubnet's Soroban fee
 * distribution, getFeeStats' sorobanInclusionFee p10-p99 at 200 stroops, and Soroban transactions bidding less are
 * refused as they would not be included there. Local simulation.
 */
describe('the pubnet fee profile', () => {
  let network: LocalNetwork;
  let server: rpc.Server;
  let payee: Keypair;
  const PERCENTILES = ['p10', 'p20', 'p30', 'p40', 'p50', 'p60', 'p70', 'p80', 'p90', 'p95', 'p99'] as const;

  beforeAll(async () => {
    network = await startTestNetwork();
    server = rpcClient(network);
    payee = await fundedAccount(network, '1');
  });
  afterEach(() => network.setFeeProfile('local'));
  afterAll(() => network.stop());

  const transfer = async (fee: string) => {
    const payer = await fundedAccount(network, '5');
    return {
      payer,
      tx: await buildTransfer({
        network,
        server,
        submitter: payer,
        from: payer.publicKey(),
        to: payee.publicKey(),
        amount: 1_000_000n,
        authSigner: payer,
        fee,
      }),
    };
  };

  it(
    'getFeeStats reports every Soroban percentile p10-p99 at 200 stroops at once, and again after more ledgers ' +
      'close',
    async () => {
      network.setFeeProfile('pubnet');
      const at = async () => (await server.getFeeStats()).sorobanInclusionFee;
      const now = await at();
      expect(Object.fromEntries(PERCENTILES.map((p) => [p, now[p]]))).toEqual(
        Object.fromEntries(PERCENTILES.map((p) => [p, '200'])),
      );
      for (let i = 0; i < 3; i += 1) await network.closeLedger();
      const later = await at();
      expect(PERCENTILES.map((p) => later[p])).toEqual(PERCENTILES.map(() => '200'));
      expect(Number(later.transactionCount)).toBeGreaterThanOrEqual(20 * 3);
    },
  );

  it(
    'a Soroban transfer bidding 100 is refused with ' + 'txInsufficientFee; bidding 200 it lands in the next ledger',
    async () => {
      network.setFeeProfile('pubnet');
      const low = await transfer('100');
      const refused = await server.sendTransaction(low.tx);
      expect(refused.status).toBe('ERROR');
      expect(resultCode(refused.errorResult as xdr.TransactionResult)).toBe('txInsufficientFee');
      const ok = await transfer('200');
      const before = network.latestLedger();
      const got = await submitAndClose(network, server, ok.tx);
      expect({ status: got.status, ledger: got.status === 'SUCCESS' ? got.ledger : null }).toEqual({
        status: 'SUCCESS',
        ledger: before + 1,
      });
    },
  );

  it(
    'classic transactions keep the base fee under the profile, and back on "local" the other users\' traffic is ' +
      'gone and 100 lands again',
    async () => {
      network.setFeeProfile('pubnet');
      await fundedAccount(network, '1');
      expect((await server.getFeeStats()).inclusionFee.p90).toBe('100');
      network.setFeeProfile('local');
      await network.closeLedger();
      // What is left in the window is the network's own Soroban transactions (a few), not 20 per ledger.
      expect(Number((await server.getFeeStats()).sorobanInclusionFee.transactionCount)).toBeLessThan(20);
      expect((await submitAndClose(network, server, (await transfer('100')).tx)).status).toBe('SUCCESS');
    },
  );

  it('POST /fee-profile switches the profile and refuses an unknown one', async () => {
    const post = (body: unknown) =>
      fetch(`${network.baseUrl}/fee-profile`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post({ profile: 'pubnet' })).status).toBe(200);
    expect((await server.getFeeStats()).sorobanInclusionFee.p50).toBe('200');
    expect((await post({ profile: 'mainnet-ish' })).status).toBe(400);
    expect((await post({ profile: 'local' })).status).toBe(200);
    expect(Number((await server.getFeeStats()).sorobanInclusionFee.transactionCount)).toBeLessThan(20);
  });
});
