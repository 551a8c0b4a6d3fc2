import { toAtomic } from '../../src/http/x402/translate';

/** The x402 face writes catalog prices as atomic amounts with the one amounts module (server/src/domain/amount.ts). */
describe('x402 atomic amounts', () => {
  it('when a price is 0.25, the atomic amount is exactly 2500000', () => {
    expect(toAtomic('0.25')).toBe('2500000');
    expect(toAtomic('12')).toBe('120000000');
  });

  it('when an amount has more than 7 decimals, toAtomic refuses it instead of cutting it to 7', () => {
    expect(() => toAtomic('0.12345678')).toThrow('"0.12345678" has 8 decimals');
  });
});
