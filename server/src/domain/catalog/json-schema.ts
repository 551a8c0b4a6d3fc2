import crypto from 'node:crypto';
import Ajv2020 from 'ajv/dist/2020';
import { linearRegExp } from './linear-regexp';

/**
 * JSON Schema (draft 2020-12) validity of seller-supplied schemas, with Ajv. Schemas are compiled, never fetched:
 * a `$ref` that leaves the document is refused, so cataloging never makes the server reach out to the network.
 *
 * Seller schemas come from anonymous callers (`POST /v1/discovery/validate`) and are re-checked by the indexing
 * worker, so nothing here may take time growing faster than the schema's size:
 * - every `pattern` / `patternProperties` regular expression runs on RE2's algorithm (`re2js`, linear time, no
 *   backtracking, no native build: `linear-regexp.ts`); a pattern it cannot compile (look-around, back-references)
 *   is refused;
 * - the schema is bounded before Ajv sees it (`SCHEMA_LIMITS`): serialized size, nesting depth, node count,
 *   `enum` length, pattern and `format` length, `patternProperties` count;
 * - `$ref` cycles that do not consume data (a schema that refers to itself through `$ref`, `allOf`, `anyOf`,
 *   `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`) are refused: they recurse forever;
 * - `uniqueItems: true` over non-scalar items needs `maxItems` (Ajv compares such items pairwise).
 */
export const MAX_SCHEMA_BYTES = 64 * 1024;

export const SCHEMA_LIMITS = {
  bytes: MAX_SCHEMA_BYTES,
  /** Nesting depth of the schema's JSON (objects and arrays). */
  depth: 32,
  /** JSON values in the schema (objects, arrays, strings, numbers, booleans, nulls). */
  nodes: 5000,
  enumItems: 256,
  patternLength: 256,
  formatLength: 64,
  patternProperties: 32,
  refLength: 512,
  /** `uniqueItems: true` on items that are not all scalars needs `maxItems` of at most this. */
  uniqueItemsMax: 1000,
} as const;

const ajv = new Ajv2020({
  strict: false,
  allErrors: false,
  validateSchema: true,
  loadSchema: undefined,
  logger: false,
  code: { regExp: linearRegExp },
});

/**
 * A small least-recently-used map (Map keeps insertion order: a hit is re-inserted at the end, the first key is the
 * oldest). Bounded, so a caller sending ever new schemas cannot grow memory.
 */
class Lru<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }
  set(key: string, v: V): void {
    this.map.delete(key);
    this.map.set(key, v);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }
}

/**
 * Checking and compiling a schema costs milliseconds (Ajv generates and compiles code), and the same schemas come
 * back again and again (a seller catalogs many resources with one schema; validate, catalog and the indexing worker
 * check the same resource). Results are cached by the SHA-256 of the schema's JSON, at most SCHEMA_CACHE_ENTRIES
 * of each kind; the checks are pure functions of that JSON, so a cached answer is the answer.
 */
export const SCHEMA_CACHE_ENTRIES = 512;
const checked = new Lru<{ error: string | null }>(SCHEMA_CACHE_ENTRIES);
const compiled = new Lru<(data: unknown) => string | null>(SCHEMA_CACHE_ENTRIES);
const hashOf = (json: string) => crypto.createHash('sha256').update(json).digest('base64');

export function checkJsonSchema(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'must be a JSON Schema object';
  const json = JSON.stringify(schema);
  const size = Buffer.byteLength(json, 'utf8');
  if (size > MAX_SCHEMA_BYTES) return `must be at most ${MAX_SCHEMA_BYTES} bytes (is ${size})`;
  const key = hashOf(json);
  const hit = checked.get(key);
  if (hit) return hit.error;
  const error = checkUncached(schema);
  checked.set(key, { error });
  return error;
}

function checkUncached(schema: object): string | null {
  const bounded = checkBounds(schema);
  if (bounded) return bounded;
  const external = findExternalRef(schema);
  if (external) return `must not reference external documents ($ref "${external.slice(0, 80)}")`;
  if ('$schema' in schema && typeof schema.$schema === 'string' && !schema.$schema.includes('2020-12')) {
    return 'must be JSON Schema draft 2020-12 (omit $schema or use https://json-schema.org/draft/2020-12/schema)';
  }
  const cycle = findRefCycle(schema as Obj);
  if (cycle) return `must not contain a $ref cycle that consumes no data (at ${cycle.slice(0, 120)})`;
  if (!ajv.validateSchema(schema)) return `is not a valid JSON Schema: ${ajv.errorsText(ajv.errors).slice(0, 300)}`;
  try {
    compileUncached(schema);
  } catch (err) {
    return `is not a valid JSON Schema: ${String((err as Error).message).slice(0, 300)}`;
  }
  return null;
}

/** Compiles a schema that passed checkJsonSchema into a validator (used for extension metadata such as x402 Bazaar
 * info). */
export function compileSchema(schema: object): (data: unknown) => string | null {
  const key = hashOf(JSON.stringify(schema));
  const hit = compiled.get(key);
  if (hit) return hit;
  const validate = compileUncached(schema);
  const check = (data: unknown) => (validate(data) ? null : ajv.errorsText(validate.errors).slice(0, 300));
  compiled.set(key, check);
  return check;
}

/** Ajv caches every compiled schema object; seller schemas are compiled once and dropped so memory stays flat. */
function compileUncached(schema: object) {
  const copy: Record<string, unknown> = { ...schema };
  delete copy.$id;
  try {
    return ajv.compile(copy);
  } finally {
    ajv.removeSchema(copy);
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const SCALAR_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null']);

/** One pass over the schema's JSON, depth-first with an explicit stack: the first bound it breaks, or null. */
function checkBounds(root: object): string | null {
  const L = SCHEMA_LIMITS;
  const stack: Array<{ node: unknown; depth: number; key: string | null }> = [{ node: root, depth: 1, key: null }];
  let nodes = 0;
  while (stack.length > 0) {
    const { node, depth, key } = stack.pop()!;
    nodes += 1;
    if (nodes > L.nodes) return `must have at most ${L.nodes} JSON values`;
    if (typeof node !== 'object' || node === null) continue;
    if (depth > L.depth) return `must be nested at most ${L.depth} levels deep`;
    if (Array.isArray(node)) {
      if (key === 'enum' && node.length > L.enumItems) return `enum must have at most ${L.enumItems} values`;
      for (const item of node) stack.push({ node: item, depth: depth + 1, key: null });
      continue;
    }
    const o = node as Obj;
    // Keywords of a schema (an object under `properties`, `$defs`... is a map of names, but the checks below
    // only refuse what is unsafe anywhere, so they are applied to every object).
    if (typeof o.pattern === 'string' && o.pattern.length > L.patternLength)
      return `pattern must be at most ${L.patternLength} characters`;
    if (typeof o.format === 'string' && o.format.length > L.formatLength)
      return `format must be at most ${L.formatLength} characters`;
    if (typeof o.$ref === 'string' && o.$ref.length > L.refLength)
      return `$ref must be at most ${L.refLength} characters`;
    if (
      key !== null &&
      key !== 'properties' &&
      key !== '$defs' &&
      key !== 'definitions' &&
      key !== 'patternProperties' &&
      key !== 'dependentSchemas' &&
      key !== 'dependentRequired' &&
      '$id' in o
    ) {
      return 'must not declare $id inside the schema (only at its root)';
    }
    if (isObj(o.patternProperties)) {
      const patterns = Object.keys(o.patternProperties);
      if (patterns.length > L.patternProperties)
        return `patternProperties must have at most ${L.patternProperties} patterns`;
      const long = patterns.find((p) => p.length > L.patternLength);
      if (long !== undefined) return `patternProperties patterns must be at most ${L.patternLength} characters`;
    }
    if (o.uniqueItems === true) {
      const scalarItems =
        isObj(o.items) &&
        (typeof o.items.type === 'string'
          ? SCALAR_TYPES.has(o.items.type)
          : Array.isArray(o.items.type) &&
            o.items.type.length > 0 &&
            o.items.type.every((t) => SCALAR_TYPES.has(String(t))));
      const capped = typeof o.maxItems === 'number' && o.maxItems <= L.uniqueItemsMax;
      if (!scalarItems && !capped)
        return `uniqueItems over items that are not scalars needs maxItems of at most ${L.uniqueItemsMax}`;
    }
    for (const [k, v] of Object.entries(o)) stack.push({ node: v, depth: depth + 1, key: k });
  }
  return null;
}

function findExternalRef(node: unknown): string | null {
  if (Array.isArray(node)) {
    for (const item of node) {
      const found = findExternalRef(item);
      if (found) return found;
    }
    return null;
  }
  if (typeof node !== 'object' || node === null) return null;
  for (const [key, value] of Object.entries(node)) {
    if ((key === '$ref' || key === '$dynamicRef') && typeof value === 'string' && !value.startsWith('#')) return value;
    const found = findExternalRef(value);
    if (found) return found;
  }
  return null;
}

/** Applicators that apply a subschema to the same instance (they consume no data). */
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'] as const;
const IN_PLACE_MANY = ['allOf', 'anyOf', 'oneOf'] as const;

/**
 * Local `$ref`s ("#", "#/json/pointer", "#anchor") form a graph with the in-place applicators; a cycle in it is a
 * schema that recurses without consuming data (Ajv overflows its stack compiling or validating it). Returns the
 * JSON pointer of a schema on a cycle, or null. The walk is iterative and linear in the schema's size.
 */
function findRefCycle(root: Obj): string | null {
  const anchors = new Map<string, unknown>();
  const collect = (node: unknown, depth: number) => {
    if (depth > SCHEMA_LIMITS.depth + 1 || typeof node !== 'object' || node === null) return;
    if (!Array.isArray(node)) {
      const o = node as Obj;
      for (const key of ['$anchor', '$dynamicAnchor']) if (typeof o[key] === 'string') anchors.set(o[key] as string, o);
    }
    for (const v of Object.values(node)) collect(v, depth + 1);
  };
  collect(root, 0);

  const resolve = (ref: string): unknown => {
    if (!ref.startsWith('#')) return undefined;
    const fragment = decodeURIComponentSafe(ref.slice(1));
    if (fragment === null) return undefined;
    if (fragment === '') return root;
    if (!fragment.startsWith('/')) return anchors.get(fragment);
    let node: unknown = root;
    for (const raw of fragment.slice(1).split('/')) {
      const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      if (typeof node !== 'object' || node === null || !Object.prototype.hasOwnProperty.call(node, token))
        return undefined;
      node = (node as Record<string, unknown>)[token];
    }
    return node;
  };

  const edges = (node: unknown): unknown[] => {
    if (!isObj(node)) return [];
    const out: unknown[] = [];
    for (const key of ['$ref', '$dynamicRef']) {
      if (typeof node[key] === 'string') {
        const target = resolve(node[key] as string);
        if (target !== undefined) out.push(target);
      }
    }
    for (const key of IN_PLACE_ONE) if (node[key] !== undefined) out.push(node[key]);
    for (const key of IN_PLACE_MANY) if (Array.isArray(node[key])) out.push(...(node[key] as unknown[]));
    if (isObj(node.dependentSchemas)) out.push(...Object.values(node.dependentSchemas));
    return out;
  };

  // Iterative three-colour depth-first search over schema objects reachable from any schema object.
  const colour = new Map<unknown, 1 | 2>();
  const schemas: unknown[] = [];
  const gather = (node: unknown, depth: number) => {
    if (depth > SCHEMA_LIMITS.depth + 1 || typeof node !== 'object' || node === null) return;
    if (!Array.isArray(node)) schemas.push(node);
    for (const v of Object.values(node)) gather(v, depth + 1);
  };
  gather(root, 0);
  for (const start of schemas) {
    if (colour.has(start)) continue;
    const stack: Array<{ node: unknown; next: unknown[]; i: number }> = [{ node: start, next: edges(start), i: 0 }];
    colour.set(start, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.i >= top.next.length) {
        colour.set(top.node, 2);
        stack.pop();
        continue;
      }
      const child = top.next[top.i++];
      if (!isObj(child)) continue;
      const c = colour.get(child);
      if (c === 1) return pointerOf(root, child) ?? '#';
      if (c === 2) continue;
      colour.set(child, 1);
      stack.push({ node: child, next: edges(child), i: 0 });
    }
  }
  return null;
}

function decodeURIComponentSafe(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

function pointerOf(root: unknown, target: unknown): string | null {
  const stack: Array<{ node: unknown; path: string; depth: number }> = [{ node: root, path: '#', depth: 0 }];
  while (stack.length > 0) {
    const { node, path, depth } = stack.pop()!;
    if (node === target) return path;
    if (typeof node !== 'object' || node === null || depth > SCHEMA_LIMITS.depth + 1) continue;
    for (const [k, v] of Object.entries(node))
      stack.push({ node: v, path: `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, depth: depth + 1 });
  }
  return null;
}
