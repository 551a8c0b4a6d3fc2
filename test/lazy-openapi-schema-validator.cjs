/**
 * express-openapi-validator's OpenAPISchemaValidator, compiled on first use: the suites map the library's own
 * `./openapi.schema.validator` to this file (test/jest.base.js, moduleNameMapper).
 *
 * The library builds it at every app start and compiles the whole OpenAPI meta-schema with Ajv, even with
 * `validateApiSpec: false` (server/src/app.ts), where it never calls it (framework/index.js, express-openapi-validator
 * 5.6: `if (validateApiSpec) validator.validate(apiDoc)`). Measured with --cpu-prof on a worker's later test files:
 * ~9 % of a file's fixed start-up CPU per service start. Here the same class is built, with the same options, the
 * first time `validate` is called, so a caller that validates gets the library's own answer.
 */
const path = require('node:path');

const { OpenAPISchemaValidator } = require(
  path.join(
    path.dirname(require.resolve('express-openapi-validator/package.json')),
    'dist/framework/openapi.schema.validator.js',
  ),
);

class LazyOpenAPISchemaValidator {
  constructor(opts) {
    this.opts = opts;
    this.validator = null;
  }

  validate(openapiDoc) {
    this.validator ??= new OpenAPISchemaValidator(this.opts);
    return this.validator.validate(openapiDoc);
  }
}

module.exports = { OpenAPISchemaValidator: LazyOpenAPISchemaValidator };
