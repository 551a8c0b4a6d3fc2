/**
 * Fees the pubnet way (issue #30), as pure functions (domain/facilitator/settlement-fees.ts): the inclusion bid is
 * the getFeeStats percentile, never below the base fee, capped; the resource fee is the simulation's, capped; their
 * sum stays within the total cap. No database, no ledger. The same choice on the local network, end to end:
 * pubnet-fees.test.ts.
 */
import { chooseSettlementFees, percentileFee, type FeeCaps } from '../../src/domain/facilitator/settlement-fees';

const caps: FeeCaps = { maxInclusion: 10_000n, maxResource: 500_000n, maxTotal: 1_000_000n, baseFee: 100n };

describe('settlement fees, chosen the pubnet way', () => {
  it(
    "reads the configured percentile of getFeeStats' sorobanInclusionFee, and nothing from a malformed or " +
      'missing figure',
    () => {
      const stats = { p10: '200', p50: '200', p90: '250', p99: '4000' };
      expect(percentileFee(stats, 'p90')).toBe(250n);
      expect(percentileFee(stats, 'p99')).toBe(4000n);
      expect(percentileFee(stats, 'p95')).toBeNull();
      expect(percentileFee({ p90: '2e5' }, 'p90')).toBeNull();
      expect(percentileFee({ p90: '-5' }, 'p90')).toBeNull();
      expect(percentileFee(undefined, 'p90')).toBeNull();
    },
  );

  it(
    "bids pubnet's 200-stroop percentile and the simulated resource fee as they are, and says where the bid came " +
      'from',
    () => {
      expect(chooseSettlementFees(200n, 16_234n, 'p90', caps)).toEqual({
        inclusion: 200n,
        resource: 16_234n,
        percentile: 'p90',
        observed: 200n,
      });
    },
  );

  it("never bids below the base fee: a quiet network's figure or an RPC without fee stats bids 100", () => {
    expect(chooseSettlementFees(null, 16_000n, 'p90', caps)).toMatchObject({ inclusion: 100n, observed: null });
    expect(chooseSettlementFees(50n, 16_000n, 'p90', caps)).toMatchObject({ inclusion: 100n, observed: 50n });
  });

  it('surge pricing above the inclusion cap is bid at the cap, not at the surge', () => {
    expect(chooseSettlementFees(250_000n, 16_000n, 'p90', caps)).toMatchObject({
      inclusion: 10_000n,
      observed: 250_000n,
    });
  });

  it('a resource fee above its cap is refused, naming the cap', () => {
    expect(chooseSettlementFees(200n, 500_001n, 'p90', caps)).toEqual({
      error: expect.stringContaining('FACILITATOR_MAX_RESOURCE_FEE_STROOPS (500000)'),
    });
  });

  it(
    'the total cap lowers the inclusion bid, never the resource ' + 'fee, and refuses when not even the base fee fits',
    () => {
      const tight = { ...caps, maxTotal: 20_000n };
      expect(chooseSettlementFees(10_000n, 16_000n, 'p90', tight)).toMatchObject({
        inclusion: 4_000n,
        resource: 16_000n,
      });
      expect(chooseSettlementFees(200n, 19_950n, 'p90', tight)).toEqual({
        error: expect.stringContaining('FACILITATOR_MAX_FEE_STROOPS (20000)'),
      });
    },
  );
});
