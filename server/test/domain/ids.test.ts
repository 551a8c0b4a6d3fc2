import { isId, newId } from '../../src/domain/ids';

describe('identifiers', () => {
  it('are prefixed ULIDs, all distinct, and sort by creation time across milliseconds', async () => {
    const first = Array.from({ length: 50_000 }, () => newId('payment'));
    await new Promise((r) => setTimeout(r, 5));
    const later = newId('payment');
    expect(first.every((id) => isId('payment', id))).toBe(true);
    expect(new Set(first).size).toBe(first.length);
    expect(first.every((id) => id.slice(0, 14) <= later.slice(0, 14))).toBe(true);
    expect(isId('receipt', first[0])).toBe(false);
  });

  it('spread their 16 random characters evenly over the 32 symbols (no symbol favoured by the random source)', () => {
    const counts = new Map<string, number>();
    const n = 20_000;
    for (let i = 0; i < n; i++)
      for (const ch of newId('resource').slice(-16)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(32);
    const expected = (n * 16) / 32; // 10,000 per symbol
    // Chi-square with 31 degrees of freedom: above 70 has probability < 0.0001 for a uniform source.
    const chi2 = [...counts.values()].reduce((acc, c) => acc + (c - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(70);
  });
});
