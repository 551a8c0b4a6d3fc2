import type { ErrorRequestHandler } from 'express';
import { MAX_ERROR_DETAILS } from './error-envelope';

/**
 * Bounded refusal work (issue #29 item 8). express-openapi-validator runs Ajv with allErrors (every problem of a
 * request at once, issue #22), and Ajv reports one error per unknown property of a closed object and one per bad item
 * of an array: one anonymous 240 KB body with 30,000 unknown properties cost ~0.4 s of CPU and answered 30,001
 * details (3.6 MB). Two bounds make a refusal cost about what parsing the body cost:
 *
 * 1. `guardValidationWork` rewrites the request side of the spec given to the validator (never the spec responses are
 *    checked against): every closed object (`additionalProperties: false`) becomes
 *    `{ if: { maxProperties: K }, then: <the object>, else: false }` with K = its declared properties
 *    + UNKNOWN_FIELDS_CHECKED, and every array with `maxItems` and `items` becomes the same with `maxItems` (its
 *    `else` is `{ maxItems }`, so its one error is the contract's own). Within
 *    the bound Ajv checks the object or array as before (every problem, each named); beyond it Ajv only counts its
 *    keys (or reads its length) and reports one error, so its work no longer grows with what the caller sent.
 * 2. `unknownFieldsBeyondGuard` (an error middleware right after the validator) drops the guard's `if` errors and
 *    turns the one error of an object beyond its bound back into what a person can act on: its first MAX_ERROR_DETAILS
 * unknown fields, each named,
 *    and how many there are (one pass over the object's keys). The envelope then lists at
 *    most MAX_ERROR_DETAILS details and the count of all (error-envelope.ts).
 */

/** Unknown properties a closed object may carry and still be checked whole (each one named, its other fields too). */
export const UNKNOWN_FIELDS_CHECKED = 20;

type Schema = Record<string, unknown>;
const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The declared property names of a closed object schema (its `properties`), or null when it is not closed. */
const closedProperties = (s: Schema): string[] | null =>
  s.additionalProperties === false ? Object.keys(isObject(s.properties) ? s.properties : {}) : null;

const SUBSCHEMA_KEYS = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'schema',
] as const;
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'schemas'] as const;
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;

/** Rewrites one schema node in place (see 1. above), after its subschemas. */
function guard(node: Schema, seen: Set<Schema>): void {
  if (seen.has(node)) return;
  seen.add(node);
  for (const k of SUBSCHEMA_KEYS) if (isObject(node[k])) guard(node[k] as Schema, seen);
  for (const k of SUBSCHEMA_MAPS)
    if (isObject(node[k])) for (const v of Object.values(node[k] as Schema)) if (isObject(v)) guard(v, seen);
  for (const k of SUBSCHEMA_LISTS)
    if (Array.isArray(node[k])) for (const v of node[k] as unknown[]) if (isObject(v)) guard(v, seen);
  const declared = closedProperties(node);
  // An object's `else` is `false` (one error, "false schema"), not its bound again: counting its keys twice would
  // double the guard's work. An array's `else` repeats `maxItems` (reading a length): its error is the contract's own.
  let guarded: { if: Schema; else: Schema | false } | null = null;
  if (declared) guarded = { if: { maxProperties: declared.length + UNKNOWN_FIELDS_CHECKED }, else: false };
  else if (typeof node.maxItems === 'number' && node.items !== undefined)
    guarded = { if: { maxItems: node.maxItems }, else: { maxItems: node.maxItems } };
  if (!guarded) return;
  const original: Schema = { ...node };
  for (const key of Object.keys(node)) delete node[key];
  Object.assign(node, { if: guarded.if, then: original, else: guarded.else });
  seen.add(original);
}

/**
 * Rewrites, in place, every schema of the request side of `spec` (operation parameters and request bodies, and the
 * component schemas they refer to) so the validator's work per request is bounded (see the file's comment). Give it a
 * copy: the spec that responses are validated against must stay as written.
 */
export function guardValidationWork(spec: Schema): void {
  const seen = new Set<Schema>();
  const components = isObject(spec.components) ? spec.components : {};
  for (const part of ['schemas', 'requestBodies', 'parameters'] as const) {
    const entries = components[part];
    if (isObject(entries)) for (const v of Object.values(entries)) if (isObject(v)) walkContainer(v, seen);
  }
  const paths = isObject(spec.paths) ? spec.paths : {};
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue;
    for (const operation of Object.values(item)) if (isObject(operation)) walkContainer(operation, seen);
  }
}

/** A schema, or something holding schemas (an operation, a parameter, a request body, a media type). */
function walkContainer(node: Schema, seen: Set<Schema>): void {
  if (
    'type' in node ||
    'properties' in node ||
    'allOf' in node ||
    'oneOf' in node ||
    'anyOf' in node ||
    'items' in node
  )
    return guard(node, seen);
  for (const p of Array.isArray(node.parameters) ? node.parameters : [])
    if (isObject(p) && isObject(p.schema)) guard(p.schema, seen);
  const body = isObject(node.requestBody) ? node.requestBody : node;
  if (isObject(body.content))
    for (const media of Object.values(body.content))
      if (isObject(media) && isObject(media.schema)) guard(media.schema, seen);
  if (isObject(node.schema)) guard(node.schema, seen);
}

// ---------------------------------------------------------------------------------------------------------------
// After the validator: the unknown fields of an object beyond its bound, named.

interface ValidatorError {
  status?: number;
  errors?: Array<{ path?: string; message?: string; errorCode?: string }>;
  /** Problems found and not listed in `errors` (read by the error handler into the envelope's count). */
  omittedErrors?: number;
}

type Resolve = (ref: string) => Schema | null;

/** The declared property names of every closed object schema that applies at `pointer` below `schema`, or null. */
function closedFieldsAt(schema: Schema, pointer: string[], resolve: Resolve, depth = 0): Set<string> | null {
  if (depth > 64) return null;
  if (typeof schema.$ref === 'string') {
    const target = resolve(schema.$ref);
    return target ? closedFieldsAt(target, pointer, resolve, depth + 1) : null;
  }
  let found: Set<string> | null = null;
  const merge = (s: Set<string> | null) => {
    if (s) found = found ? new Set([...found, ...s]) : s;
  };
  for (const k of SUBSCHEMA_LISTS)
    if (Array.isArray(schema[k]))
      for (const v of schema[k] as unknown[]) if (isObject(v)) merge(closedFieldsAt(v, pointer, resolve, depth + 1));
  if (pointer.length === 0) {
    const declared = closedProperties(schema);
    if (declared) merge(new Set(declared));
    return found;
  }
  const [head, ...rest] = pointer;
  const props = isObject(schema.properties) ? schema.properties : {};
  if (Object.hasOwn(props, head) && isObject(props[head]))
    merge(closedFieldsAt(props[head] as Schema, rest, resolve, depth + 1));
  else if (/^\d+$/.test(head) && isObject(schema.items)) merge(closedFieldsAt(schema.items, rest, resolve, depth + 1));
  else if (isObject(schema.additionalProperties))
    merge(closedFieldsAt(schema.additionalProperties, rest, resolve, depth + 1));
  return found;
}

const unescapePointer = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');

/**
 * An error middleware placed right after the validator: each object beyond its guard (the `false schema` error of its
 * `else`: a closed object holding more than its declared fields + UNKNOWN_FIELDS_CHECKED) is reported as its unknown
 * fields,
 * the first MAX_ERROR_DETAILS named (`additionalProperties`, as the validator words them) and the rest counted in
 * `omittedErrors`. Its work: one pass over that object's keys.
 */
export function unknownFieldsBeyondGuard(spec: Schema): ErrorRequestHandler {
  const resolve: Resolve = (ref) => {
    if (!ref.startsWith('#/')) return null;
    let node: unknown = spec;
    for (const part of ref.slice(2).split('/')) node = isObject(node) ? node[unescapePointer(part)] : undefined;
    return isObject(node) ? node : null;
  };
  return (err: ValidatorError, req, _res, next) => {
    if (err?.status !== 400 || !Array.isArray(err.errors)) return next(err);
    // The guard's `if` reports "must match then/else schema" beside the errors of the branch it chose: noise (the
    // contract itself uses no if/then/else, so every `if` error is the guard's).
    err.errors = err.errors.filter((e) => !(e.errorCode ?? '').startsWith('if.'));
    // The guard's `else: false` on an object beyond its bound (the contract has no `false` subschema of its own).
    const guarded = err.errors.filter((e) => e.errorCode === 'false schema.openapi.validation');
    if (guarded.length === 0) return next(err);
    const route = (req as { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute;
    const operation = route
      ? (spec.paths as Record<string, Record<string, Schema>> | undefined)?.[route]?.[req.method.toLowerCase()]
      : undefined;
    const content =
      operation && isObject(operation.requestBody)
        ? (resolve(String(operation.requestBody.$ref ?? '')) ?? operation.requestBody).content
        : undefined;
    const bodySchema =
      isObject(content) && isObject((content as Schema)['application/json'])
        ? ((content as Record<string, Schema>)['application/json'].schema as Schema | undefined)
        : undefined;
    if (!bodySchema) return next(err);
    const replaced = new Set<string>();
    const named: NonNullable<ValidatorError['errors']> = [];
    let omitted = 0;
    for (const e of guarded) {
      const path = e.path ?? '';
      const pointer = path.split('/').slice(2).map(unescapePointer);
      const declared = closedFieldsAt(bodySchema, pointer, resolve);
      let value: unknown = req.body;
      for (const part of pointer)
        value = isObject(value) || Array.isArray(value) ? (value as Record<string, unknown>)[part] : undefined;
      if (!declared || !isObject(value) || !path.startsWith('/body')) {
        e.message = 'has too many fields: remove the ones this operation does not define (see /docs)';
        continue;
      }
      // One pass over the object's keys: its unknown ones counted, the first named.
      let unknown = 0;
      const first: string[] = [];
      for (const key of Object.keys(value)) {
        if (declared.has(key)) continue;
        unknown += 1;
        if (named.length + first.length < MAX_ERROR_DETAILS) first.push(key);
      }
      replaced.add(path);
      for (const key of first)
        named.push({
          path: `${path}/${key}`,
          message: 'must NOT have additional properties',
          errorCode: 'additionalProperties.openapi.validation',
        });
      omitted += unknown - first.length;
    }
    if (replaced.size === 0) return next(err);
    // The guard's own error on those objects is replaced by their unknown fields.
    const kept = err.errors.filter(
      (e) => !(replaced.has(e.path ?? '') && e.errorCode === 'false schema.openapi.validation'),
    );
    err.errors = [...kept, ...named];
    err.omittedErrors = (err.omittedErrors ?? 0) + omitted;
    next(err);
  };
}
