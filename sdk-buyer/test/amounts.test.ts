import fs from 'node:fs';
import path from 'node:path';
import {
  AMOUNT_PATTERN,
  amountProblem,
  formatAmount,
  fromStroops,
  isAmount,
  MAX_AMOUNT_STROOPS,
  normalizeAmount,
  toStroops,
} from '../src/core/amounts';

/**
 * The one amounts module (source of sdk-seller/src/core/amounts.ts and server/src/domain/amount.ts): exact decimal
 * <-> stroops conversion that refuses what is not an amount instead of rounding, cutting or guessing.
 */
describe('amounts', () => {
  it('when an amount has fewer than 7 decimals, toStroops pads them: 0.5 is 5000000 stroops', () => {
    expect(toStroops('0.5')).toBe(5_000_000n);
    expect(toStroops('12.5')).toBe(125_000_000n);
    expect(toStroops('1')).toBe(10_000_000n);
    expect(toStroops('0.0000001')).toBe(1n);
    expect(toStroops('0')).toBe(0n);
  });

  it('when an amount has more than 7 decimals, it is refused with a RangeError that says so, never truncated', () => {
    expect(() => toStroops('0.12345678')).toThrow(RangeError);
    expect(() => toStroops('0.12345678')).toThrow(
      '"0.12345678" has 8 decimals: Stellar amounts have at most 7, and an amount is never rounded',
    );
    expect(() => toStroops('1.00000000')).toThrow(/has 8 decimals/);
    expect(isAmount('0.12345678')).toBe(false);
  });

  it('when an amount is negative, it is refused', () => {
    expect(() => toStroops('-1')).toThrow('"-1" is negative: an amount is zero or more');
    expect(() => toStroops('-0.5')).toThrow(RangeError);
    expect(() => fromStroops(-1n)).toThrow('-1 stroops is negative');
    expect(() => formatAmount(-5_000_000n)).toThrow(RangeError);
  });

  it('when an amount is huge, it is refused: at most 12 integer digits, as the contract says', () => {
    expect(toStroops('999999999999.9999999')).toBe(MAX_AMOUNT_STROOPS);
    expect(() => toStroops('1000000000000')).toThrow(
      '"1000000000000" is out of range: at most 12 integer digits (999999999999.9999999)',
    );
    expect(() => toStroops('9'.repeat(400))).toThrow(/^"9{40}\.\.\." is out of range/);
    expect(() => fromStroops(MAX_AMOUNT_STROOPS + 1n)).toThrow(/out of range/);
    expect(() => fromStroops('1'.repeat(60))).toThrow(/is not a whole number of stroops/);
  });

  it('when a string is not a decimal amount at all, it is refused with what an amount looks like', () => {
    for (const bad of ['', ' 1', '1 ', '1,5', '1e3', '0x10', '.5', '5.', 'NaN', '1.2.3', '+1']) {
      expect(() => toStroops(bad)).toThrow(RangeError);
      expect(amountProblem(bad)).toMatch(/is not a decimal amount: digits, an optional dot and at most 7 decimals/);
    }
    expect(() => toStroops('01.5')).toThrow('"01.5" has a leading zero');
    expect(() => toStroops(5 as unknown as string)).toThrow(
      'an amount is a decimal string such as "0.05" (got a number)',
    );
  });

  it('fromStroops writes exactly 7 decimals (padded with leading zeros), formatAmount the shortest form', () => {
    expect(fromStroops(1n)).toBe('0.0000001');
    expect(fromStroops(2_500_000n)).toBe('0.2500000');
    expect(fromStroops('125000000')).toBe('12.5000000');
    expect(fromStroops(0n)).toBe('0.0000000');
    expect(formatAmount(2_500_000n)).toBe('0.25');
    expect(formatAmount(1_000_000_000n)).toBe('100');
    expect(formatAmount(0n)).toBe('0');
    expect(normalizeAmount('0.0100000')).toBe('0.01');
    expect(normalizeAmount('not an amount')).toBe('not an amount');
  });

  it('round trip: every amount comes back from its stroops, in either form', () => {
    for (const a of [
      '0',
      '0.0000001',
      '0.01',
      '1',
      '12.5',
      '100',
      '999999999999.9999999',
      '123456789012.3456789',
      '7.0000010',
    ]) {
      const stroops = toStroops(a);
      expect(toStroops(fromStroops(stroops))).toBe(stroops);
      expect(toStroops(formatAmount(stroops))).toBe(stroops);
      expect(formatAmount(stroops)).toBe(normalizeAmount(a));
    }
    for (const s of [0n, 1n, 9_999_999n, 10_000_000n, 10_000_001n, MAX_AMOUNT_STROOPS])
      expect(toStroops(fromStroops(s))).toBe(s);
  });

  it("the pattern is the contract's Amount pattern", () => {
    const yaml = fs.readFileSync(path.resolve(__dirname, '../../openapi/components/schemas/Amount.yaml'), 'utf8');
    expect(yaml).toContain(`pattern: ${AMOUNT_PATTERN.source}\n`);
  });
});
