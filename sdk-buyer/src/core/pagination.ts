/**
 * Async-iterable pagination over the contract's cursor lists (one source, copied into the seller SDK by
 * scripts/generate.mjs): a page carries its
 * items and `nextCursor`; `null` ends the list. `for await (const item of paginate(...))` fetches lazily, one page
 * at a time, and stops as soon as the caller breaks out of the loop.
 */
export interface PageLike<T> {
  nextCursor: string | null;
  items?: T[];
  resources?: T[];
}

export type PageIterable<T> = AsyncIterable<T> & {
  /** Collects every item (or the first `max`) into an array. */
  toArray(max?: number): Promise<T[]>;
};

export function paginate<T>(
  fetchPage: (cursor: string | undefined) => Promise<PageLike<T>>,
  startCursor?: string,
): PageIterable<T> {
  async function* iterate(): AsyncGenerator<T, void, undefined> {
    let cursor = startCursor;
    for (;;) {
      const page = await fetchPage(cursor);
      for (const item of page.items ?? page.resources ?? []) yield item;
      if (!page.nextCursor) return;
      cursor = page.nextCursor;
    }
  }
  return {
    [Symbol.asyncIterator]: iterate,
    async toArray(max = Infinity) {
      const out: T[] = [];
      if (max <= 0) return out;
      for await (const item of iterate()) {
        out.push(item);
        if (out.length >= max) break;
      }
      return out;
    },
  };
}
