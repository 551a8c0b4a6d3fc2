import { diversify, DIVERSITY_TOP } from '../../src/domain/discovery/diversity';

/** A page of results in score order: `origins[i]` is the host of the i-th result. */
const page = (origins: string[]) => origins.map((h, i) => ({ id: `r${i}`, url: `https://${h}/v${i}/{city}` }));
const ids = (items: Array<{ id: string }>) => items.map((i) => Number(i.id.slice(1)));

describe('diversity of a search page (pure)', () => {
  it(
    'a third result of one origin in the top 10 moves below position 10 when the page has another result to take ' +
      'its place, and every result past the top 10 keeps its score order',
    () => {
      // r0..r4 share one origin; r5..r24 each have their own.
      const items = page([...Array(5).fill('big.example'), ...Array.from({ length: 20 }, (_, i) => `s${i}.example`)]);
      const shown = ids(diversify(items, 'rainfall forecast'));
      expect(shown.slice(0, DIVERSITY_TOP)).toEqual([0, 1, 5, 6, 7, 8, 9, 10, 11, 12]);
      expect(shown.slice(DIVERSITY_TOP)).toEqual([2, 3, 4, ...Array.from({ length: 12 }, (_, i) => 13 + i)]);
      expect([...shown].sort((a, b) => a - b)).toEqual(ids(items));
    },
  );

  it('results of an origin the query names (its host or a distinctive label of it) are not capped', () => {
    const items = page([...Array(5).fill('api.kowaridata.example'), 'a.example', 'b.example']);
    expect(ids(diversify(items, 'kowaridata rainfall'))).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(ids(diversify(items, 'api.kowaridata.example'))).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // a generic label (api) does not name it
    expect(ids(diversify(items, 'api rainfall'))).toEqual([0, 1, 5, 6, 2, 3, 4]);
  });

  it('a page of at most ten results keeps its set: the capped results follow the others in score order', () => {
    const items = page(['x.example', 'x.example', 'x.example', 'y.example', 'x.example', 'not a host{']);
    expect(ids(diversify(items, 'anything'))).toEqual([0, 1, 3, 5, 2, 4]);
  });
});
