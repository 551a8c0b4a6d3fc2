import path from 'node:path';

/**
 * express-openapi-validator's metadata middleware (`lookupRoute`) compiles every route of the spec with
 * path-to-regexp's `pathToRegexp` on EVERY request, to find the route the request matches (library behaviour,
 * express-openapi-validator 5.x): with ~50 routes that was 4–5 % of a verify's CPU (scripts/bench/PROFILE.md).
 * `pathToRegexp` is a pure function of (route, options), and the validator only reads the answer (`regexp.exec`,
 * `keys`), so the answer for a route is kept and handed back on the next call: the matching itself, and therefore
 * which route a request resolves to, is unchanged.
 *
 * The memo wraps the `pathToRegexp` export of the path-to-regexp copy the validator itself resolves (its module
 * reads the export at call time). It is bounded: the routes come from the spec (fixed at start), and past
 * MAX_ENTRIES distinct (route, options) pairs calls are passed through uncached. Only string routes with plain
 * options are kept; anything else goes straight to the library.
 */
const MAX_ENTRIES = 2048;

type PathToRegexp = (route: unknown, options?: Record<string, unknown>) => { regexp: RegExp; keys: unknown[] };
let installed = false;

export function memoizeValidatorRouteCompilation(): void {
  if (installed) return;
  installed = true;
  let mod: { pathToRegexp?: PathToRegexp };
  try {
    const validatorDir = path.dirname(require.resolve('express-openapi-validator/package.json'));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require(require.resolve('path-to-regexp', { paths: [validatorDir] })) as { pathToRegexp?: PathToRegexp };
  } catch {
    return; // layout not as expected: leave the library alone
  }
  const original = mod.pathToRegexp;
  if (typeof original !== 'function') return;
  type Compiled = ReturnType<PathToRegexp>;
  // The validator calls this once per route of the spec on every request, always with `{ sensitive, strict }`
  // booleans: those calls are keyed by the route alone in one map per flag pair (no key string built per call, which
  // was 2.7 % of an invalid-signature refusal's CPU with JSON.stringify); other plain options by a string key.
  const byFlags: Array<Map<string, Compiled>> = [new Map(), new Map(), new Map(), new Map()];
  const other = new Map<string, Compiled>();
  let entries = 0;
  const memoized: PathToRegexp = (route, options) => {
    if (typeof route !== 'string') return original(route, options);
    const flags = options === undefined ? -1 : flagPair(options);
    let cache: Map<string, Compiled>;
    let key: string;
    if (flags >= 0) {
      cache = byFlags[flags];
      key = route;
    } else if (options === undefined || plainOptions(options)) {
      cache = other;
      key = `${route}\u0000${options ? JSON.stringify(options) : ''}`;
    } else return original(route, options);
    let hit = cache.get(key);
    if (!hit) {
      hit = original(route, options);
      // the regexp is shared between calls: never one whose exec() keeps state between calls
      if (hit.regexp.global || hit.regexp.sticky || entries >= MAX_ENTRIES) return hit;
      cache.set(key, hit);
      entries += 1;
    }
    return hit;
  };
  mod.pathToRegexp = memoized;
}

/** 0..3 for options that are exactly `{ sensitive?, strict? }` booleans (bit 0 sensitive, bit 1 strict), else -1. */
function flagPair(options: Record<string, unknown>): number {
  let flags = 0;
  for (const k in options) {
    const v = options[k];
    if (v !== undefined && typeof v !== 'boolean') return -1;
    if (k === 'sensitive') flags |= v ? 1 : 0;
    else if (k === 'strict') flags |= v ? 2 : 0;
    else return -1;
  }
  return flags;
}

/** Options made of booleans, strings and numbers only (what the validator passes: sensitive, strict). */
function plainOptions(options: Record<string, unknown>): boolean {
  for (const v of Object.values(options))
    if (!['boolean', 'string', 'number', 'undefined'].includes(typeof v)) return false;
  return true;
}
