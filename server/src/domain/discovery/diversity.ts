/**
 * Diversity (issue #33): at most DIVERSITY_PER_ORIGIN results of one origin (scheme, host and port of the URL) in
 * the first DIVERSITY_TOP positions of a search, unless the query names the origin (its host, or a label of the host
 * that is not a generic one such as www, api or com). A post-step over one page: the page keeps the same set of
 * results (so its cursor, the last result in score order, neither skips nor repeats), re-ordered so that a third
 * result of an origin moves below position 10 when the page has another result to take its place.
 */
export const DIVERSITY_TOP = 10;
export const DIVERSITY_PER_ORIGIN = 2;

const GENERIC_LABELS = new Set([
  'www',
  'api',
  'apis',
  'com',
  'net',
  'org',
  'io',
  'dev',
  'app',
  'co',
  'test',
  'example',
  'localhost',
]);

export function originOf(url: string): string {
  try {
    return new URL(url.replace(/[{}]/g, '')).origin;
  } catch {
    return url;
  }
}

/** Whether the query names the origin: its host, or one of the host's distinctive labels as a query word. */
export function queryNamesOrigin(q: string, origin: string): boolean {
  return namesOrigin(queryTerms(q), origin);
}

/** The query as queryNamesOrigin reads it: lower case, and its words. */
function queryTerms(q: string): { text: string; words: Set<string> } {
  const text = q.toLowerCase();
  return { text, words: new Set(text.split(/[^a-z0-9-]+/).filter(Boolean)) };
}

function namesOrigin(query: { text: string; words: Set<string> }, origin: string): boolean {
  let host: string;
  try {
    host = new URL(origin).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (query.text.includes(host)) return true;
  return host.split('.').some((label) => !GENERIC_LABELS.has(label) && label.length >= 3 && query.words.has(label));
}

/**
 * The page re-ordered (see above). Only the results placed while the top is filling need their origin (URL parsing
 * was most of this step's cost in the search profile: issue #31), and the query's words are read once per page.
 */
export function diversify<T extends { url: string }>(items: T[], q: string): T[] {
  const counts = new Map<string, number>();
  const top: T[] = [];
  const deferred: T[] = [];
  const named = new Map<string, boolean>();
  let query: ReturnType<typeof queryTerms> | undefined;
  for (const item of items) {
    if (top.length >= DIVERSITY_TOP) {
      top.push(item);
      continue;
    }
    const origin = originOf(item.url);
    if (!named.has(origin)) named.set(origin, namesOrigin((query ??= queryTerms(q)), origin));
    const n = counts.get(origin) ?? 0;
    if (n >= DIVERSITY_PER_ORIGIN && !named.get(origin)) {
      deferred.push(item);
      continue;
    }
    counts.set(origin, n + 1);
    top.push(item);
  }
  // Deferred results follow the capped top, in score order, where the page has room (the page keeps its set).
  if (top.length <= DIVERSITY_TOP) return [...top, ...deferred];
  return [...top.slice(0, DIVERSITY_TOP), ...mergeByIndex(items, deferred, top.slice(DIVERSITY_TOP))];
}

/** The two lists merged back into their original (score) order. */
function mergeByIndex<T>(order: T[], a: T[], b: T[]): T[] {
  const rank = new Map(order.map((x, i) => [x, i]));
  return [...a, ...b].sort((x, y) => (rank.get(x) ?? 0) - (rank.get(y) ?? 0));
}
