import Ajv2020 from 'ajv/dist/2020';

/**
 * JSON Schema (draft 2020-12) validity of seller-supplied schemas, with Ajv. Schemas are compiled, never fetched:
 * a `$ref` that leaves the document is refused, so cataloging never makes the server reach out to the network.
 */
export const MAX_SCHEMA_BYTES = 64 * 1024;

const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: true, loadSchema: undefined });

export function checkJsonSchema(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'must be a JSON Schema object';
  const size = Buffer.byteLength(JSON.stringify(schema), 'utf8');
  if (size > MAX_SCHEMA_BYTES) return `must be at most ${MAX_SCHEMA_BYTES} bytes (is ${size})`;
  const external = findExternalRef(schema);
  if (external) return `must not reference external documents ($ref "${external}")`;
  if ('$schema' in schema && typeof schema.$schema === 'string' && !schema.$schema.includes('2020-12')) {
    return 'must be JSON Schema draft 2020-12 (omit $schema or use https://json-schema.org/draft/2020-12/schema)';
  }
  if (!ajv.validateSchema(schema)) return `is not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}`;
  try {
    compileUncached(schema);
  } catch (err) {
    return `is not a valid JSON Schema: ${(err as Error).message}`;
  }
  return null;
}

/** Compiles a valid schema into a validator (used for extension metadata such as x402 Bazaar info). */
export function compileSchema(schema: object): (data: unknown) => string | null {
  const validate = compileUncached(schema);
  return (data) => (validate(data) ? null : ajv.errorsText(validate.errors));
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
