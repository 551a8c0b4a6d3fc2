/** bench:search's rotation of queries and filters, and the plain full-text query it is compared with (shared with
 * scripts/bench/search-lab.ts). */
/** Natural queries as agents type them (like the relevance set's, scripts/bench/relevance/queries.txt): sentences,
 * short ones, a typo, punctuation. */
export const QUERIES = [
  'weather forecast',
  'translate english to spanish',
  'crypto price',
  'generate an image from a prompt',
  'realtime stock feed',
  'hourly weather for my city',
  'pdf converter',
  'speech to text',
  'cheap flight search',
  'no such thing here',
  'wether forcast',
  'Air Quality Index (AQI)',
];

/** The i-th search of the rotation: a query and its filters. */
export function searchOf(i: number): { q: string; type?: string; maxPrice?: string; limit: number } {
  const q = QUERIES[i % QUERIES.length];
  const k = Math.floor(i / QUERIES.length) % 4;
  return { q, type: k === 1 ? 'http' : undefined, maxPrice: k === 2 ? '0.25' : undefined, limit: k === 3 ? 50 : 20 };
}

/** The plain full-text query: same tsvector, same filters and limit, ranked by ts_rank. */
export function plainQuery(s: ReturnType<typeof searchOf>): { text: string; values: unknown[] } {
  const values: unknown[] = [s.q, s.limit];
  const where = [`d.document @@ websearch_to_tsquery('english', $1)`, 'd.discoverable'];
  if (s.type) {
    values.push(s.type);
    where.push(`d.type = $${values.length}`);
  }
  if (s.maxPrice) {
    values.push(s.maxPrice);
    where.push(`d.amount <= $${values.length}::numeric`);
  }
  return {
    text: `SELECT d.resource_id, d.name, d.description, d.url, d.amount::text AS amount
             FROM search_documents d WHERE ${where.join(' AND ')}
            ORDER BY ts_rank(d.document, websearch_to_tsquery('english', $1)) DESC LIMIT $2`,
    values,
  };
}
