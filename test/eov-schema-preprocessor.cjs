/**
 * express-openapi-validator's SchemaPreprocessor, resolving `#/components/schemas/<id>` without compiling it: the
 * suites map the library's own `./middlewares/parsers/schema.preprocessor` (and `./parsers/schema.preprocessor`) to
 * this file (test/jest.base.js, moduleNameMapper).
 *
 * At every app start the library's preprocessor resolves each `$ref` it meets with `ajv.getSchema(ref)?.schema`
 * (middlewares/parsers/schema.preprocessor.js, `resolveSchema`, express-openapi-validator 5.6): for a component
 * schema that compiles the whole schema with Ajv and keeps only `.schema`, the very object its Ajv registered under
 * that key (framework/ajv/index.js: `ajv.addSchema(components.schemas[id], '#/components/schemas/' + id)`); the
 * compiled function is dropped with the preprocessor's Ajv. Measured with --cpu-prof on a worker's later test files
 * (server/test, one service start each): the preprocessor was the largest single part of a service start's CPU,
 * most of it those compiles.
 *
 * Here a `$ref` that is exactly such a key gets that same object (taken when the preprocessor is built, as its Ajv
 * registered them), so the preprocessor's result is the same object graph; every other `$ref` (responses, parameters,
 * a key with escaped characters) goes to the library's own resolveSchema. What the shortcut skips is only the compile
 * whose result is dropped: the request validator compiles its own schemas from the same spec, so a schema Ajv cannot
 * compile still fails the request that needs it.
 */
const path = require('node:path');

const library = require(
  path.join(
    path.dirname(require.resolve('express-openapi-validator/package.json')),
    'dist/middlewares/parsers/schema.preprocessor.js',
  ),
);

const PREFIX = '#/components/schemas/';

class SchemaPreprocessor extends library.SchemaPreprocessor {
  constructor(apiDoc, ajvOptions, validateResponsesOpts) {
    super(apiDoc, ajvOptions, validateResponsesOpts);
    /** What the preprocessor's Ajv registered: every component schema, by id, as it stood at construction. */
    this.registeredSchemas = new Map(Object.entries(apiDoc?.components?.schemas ?? {}));
  }

  resolveSchema(schema) {
    const ref = schema?.$ref;
    if (typeof ref === 'string' && ref.startsWith(PREFIX) && !this.resolvedSchemaCache.has(ref)) {
      const registered = this.registeredSchemas.get(ref.slice(PREFIX.length));
      if (registered !== null && typeof registered === 'object') {
        this.resolvedSchemaCache.set(ref, registered);
        return registered;
      }
    }
    return super.resolveSchema(schema);
  }
}

module.exports = { ...library, SchemaPreprocessor };
