/** The fields of a resource whose change makes a new version (catalog writes compare them, key order aside). */
export const TERM_FIELDS = [
  'name',
  'description',
  'url',
  'routeTemplate',
  'network',
  'payTo',
  'assetCode',
  'assetIssuer',
  'amount',
  'inputSchema',
  'outputSchema',
  'extensions',
] as const;
export type TermField = (typeof TERM_FIELDS)[number];

/** A JSON value with every object's keys sorted, so two values that differ only in key order compare equal. */
export function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  return v;
}

/** Two JSON values (an amount in Stroops among them: a bigint compares by its digits) are the same. */
export function sameJson(a: unknown, b: unknown): boolean {
  const json = (v: unknown) => JSON.stringify(canonical(v), (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x));
  return json(a) === json(b);
}
