/**
 * @apidevtools/json-schema-ref-parser, with `bundle` of an already bundled spec skipped when it is known to change
 * nothing: the suites map the package to this file (test/jest.base.js, moduleNameMapper); its only user in a test
 * process is express-openapi-validator, which bundles its `apiSpec` at every app start (framework/index.js,
 * `loadSpec`: `$RefParser.bundle(apiSpec)`).
 *
 * The server hands it the bundled spec (openapi/dist/openapi.json, internal `$ref`s only), for which `bundle`
 * resolves every `$ref` and returns the very object it was given, unchanged (checked: same object, same JSON). It
 * still crawled the 400 KB document each time: ~0.45 s of CPU per service start in a worker's later test files
 * (--cpu-prof, load 7-8), most of a service start's share of the library.
 *
 * Here the first `bundle` of a given document text (its SHA-256, with this package's version) in a worker runs the
 * library's, and if the result is the object it was given with the same JSON text, that text is remembered; a later
 * `bundle` of an object with a remembered text returns that object, as the library would. Anything else (a file
 * path, options, a callback, a text not yet seen or one the library changed) goes to the library's `bundle`.
 * The memory is the worker process's (a core module outlives the test files' module registries), never a file.
 */
const { createHash } = require('node:crypto');
const path = require('node:path');
const v8 = require('node:v8');

const packageDir = path.dirname(require.resolve('@apidevtools/json-schema-ref-parser/package.json'));
const library = require(path.join(packageDir, require(path.join(packageDir, 'package.json')).main));
const version = require(path.join(packageDir, 'package.json')).version;

/**
 * The hashes of the texts whose bundle was the unchanged input, for this worker process: a string (a primitive) on a
 * core module, so no object of one test file's context outlives it.
 */
const MEMORY = Symbol.for('paid-api-marketplace.test.unchanged-bundles');
const unchanged = {
  has: (key) => (v8[MEMORY] ?? '').includes(`${key}\n`),
  add: (key) => void (v8[MEMORY] = `${v8[MEMORY] ?? ''}${key}\n`),
};

const keyOf = (text) => createHash('sha256').update(version).update('\0').update(text).digest('hex');

async function bundle(...args) {
  const [schema] = args;
  if (args.length !== 1 || schema === null || typeof schema !== 'object') return library.bundle(...args);
  const text = JSON.stringify(schema);
  const key = keyOf(text);
  if (unchanged.has(key)) return schema;
  const result = await library.bundle(schema);
  if (result === schema && JSON.stringify(result) === text) unchanged.add(key);
  return result;
}

// The library's static `$RefParser.bundle` too, in case a caller reaches it through the class.
class $RefParser extends library.$RefParser {
  static bundle(...args) {
    return bundle(...args);
  }
}

module.exports = { ...library, $RefParser, default: $RefParser, bundle };
