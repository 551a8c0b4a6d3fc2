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
  literalRoutesFirst(memoized);
}

type RouteMap = Record<string, unknown>;
/** The Express route a request matches with the app's default options (case-insensitive, trailing slash optional). */
const DEFAULT_ROUTING = { sensitive: false, strict: false };

/**
 * express-openapi-validator's `lookupRoute` tries the spec's routes in its context's `expressRouteMap` order (the
 * library's sort: alphabetical, literal before parameter at the same prefix) and takes the FIRST that matches:
 * /v1/verify was the 35th of 41 routes, /x402/verify the last, each try a regex and a few lookups, on every request.
 * The map is reordered once when the context is built: every literal route (no parameter) that no route before it
 * matches moves to the front, the rest keep their order after them. Which route a request resolves to is unchanged:
 * a request that matches a moved literal route matched nothing before it (that is the condition for moving it), and
 * a request whose first match was an unmoved route cannot match a moved one (it would then be that moved route's
 * path, which an earlier route, the unmoved one or one before it, matches: so it would not have moved).
 */
export function reorderRouteMap(map: RouteMap, compile: PathToRegexp): RouteMap {
  const routes = Object.keys(map);
  const moved = routes.filter(
    (route, i) =>
      !route.includes(':') &&
      !route.includes('*') &&
      !routes.slice(0, i).some((earlier) => compile(earlier, DEFAULT_ROUTING).regexp.test(route)),
  );
  if (moved.length === 0 || moved.length === routes.length) return map;
  const order = [...moved, ...routes.filter((r) => !moved.includes(r))];
  return Object.fromEntries(order.map((r) => [r, map[r]]));
}

function literalRoutesFirst(compile: PathToRegexp): void {
  let proto: { buildRouteMaps?: (this: { expressRouteMap: RouteMap }, ...args: unknown[]) => unknown };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    proto = require('express-openapi-validator/dist/framework/openapi.context').OpenApiContext.prototype;
  } catch {
    return; // layout not as expected: leave the library alone
  }
  const original = proto.buildRouteMaps;
  if (typeof original !== 'function') return;
  proto.buildRouteMaps = function buildRouteMapsLiteralFirst(...args) {
    const result = original.apply(this, args);
    if (this.expressRouteMap && typeof this.expressRouteMap === 'object')
      this.expressRouteMap = reorderRouteMap(this.expressRouteMap, compile);
    return result;
  };
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
