/**
 * The Jest runtime of every suite (test/jest.base.js `runtime`): Jest's own, except that the modules it compiles
 * keep a V8 code cache. Jest evaluates every module again for each test file (each file has its own module
 * registry), so without one V8 parses the whole server and its dependencies (Sequelize, the Stellar SDK, ajv, ...)
 * once per test file. The cache is keyed by Node's version and the module's path and compiled source, kept in memory
 * for the worker's next test files and under node_modules/.cache/ for the other workers and later runs; a cache V8
 * rejects (another V8, other flags) is dropped and the module compiled as before. Only the compilation is cached:
 * every module is still evaluated afresh in each test file's own context, so files stay as isolated as before.
 */
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const DIR = path.join(__dirname, '../node_modules/.cache/jest-v8-code-cache');
const memory = new Map();
let diskUsable = true;

function cacheKey(source, filename) {
  return createHash('sha256')
    .update(`${process.version}\0${process.arch}\0${process.execArgv.join(' ')}\0${filename}\0`)
    .update(source)
    .digest('hex');
}

function readCache(key) {
  const hit = memory.get(key);
  if (hit || !diskUsable) return hit;
  try {
    const data = fs.readFileSync(path.join(DIR, key));
    memory.set(key, data);
    return data;
  } catch {
    return undefined;
  }
}

function writeCache(key, data) {
  memory.set(key, data);
  if (!diskUsable) return;
  try {
    fs.mkdirSync(DIR, { recursive: true });
    const tmp = path.join(DIR, `${key}.${process.pid}.tmp`);
    fs.writeFileSync(tmp, data);
    fs.renameSync(tmp, path.join(DIR, key)); // atomic: another worker never reads half a file
  } catch {
    diskUsable = false; // read-only tree: the in-memory cache still serves this worker
  }
}

function dropCache(key) {
  memory.delete(key);
  fs.rmSync(path.join(DIR, key), { force: true });
}

/**
 * Jest 30 compiles each module body with `vm.compileFunction(source, ['module', 'exports', 'require', ...], options)`
 * from an internal class it does not export, reading the function off the `node:vm` module at each call: the cache
 * is added there, for Jest's module bodies only (recognised by that parameter list and an absolute file name).
 */
const compileFunction = vm.compileFunction;
function isJestModuleBody(params, options) {
  return (
    Array.isArray(params) &&
    params[0] === 'module' &&
    params[1] === 'exports' &&
    params[2] === 'require' &&
    options != null &&
    options.parsingContext != null &&
    typeof options.filename === 'string' &&
    path.isAbsolute(options.filename) &&
    options.cachedData === undefined
  );
}
vm.compileFunction = function compileWithCodeCache(source, params, options) {
  if (!isJestModuleBody(params, options)) return compileFunction.call(this, source, params, options);
  const key = cacheKey(`${params.join(',')}\0${source}`, options.filename);
  const cachedData = readCache(key);
  const fn = compileFunction.call(
    this,
    source,
    params,
    cachedData ? { ...options, cachedData } : { ...options, produceCachedData: true },
  );
  if (cachedData && fn.cachedDataRejected) dropCache(key);
  else if (!cachedData && fn.cachedDataProduced && fn.cachedData) writeCache(key, fn.cachedData);
  return fn;
};

module.exports = require('jest-runtime').default;
