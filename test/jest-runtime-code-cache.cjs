/**
 * Jest's module runtime (jest-runtime), with a V8 code cache per worker process: the `runtime` of every suite
 * (test/jest.base.js).
 *
 * Jest runs each test file in a fresh module registry, so every file compiles the whole module graph again (the
 * server, Express, Sequelize, the Stellar SDK, Ajv: thousands of modules) with `vm.compileFunction`, which V8 does not
 * cache between calls. Measured with --cpu-prof on a worker's later files: compiling was ~13 % of a file's fixed
 * start-up CPU (module loading plus one service start). Here the first compile of a module in a worker also produces
 * V8's code cache for it, and the worker's later files compile that module from the cache (~5x faster, measured on
 * 800 modules of the Stellar SDK, Sequelize and Ajv: 2.5 s against 0.45 s).
 *
 * Only compilation changes: the same source (the transformed file Jest hands over, compared in full before its cache
 * is used), the same parameters, context and file name, and every module still runs afresh in every test file. V8
 * checks the cache against the source itself and compiles normally when it rejects it. Anything unusual (a core
 * module, a compile error, a jest-runtime without the internal `executor` this wraps) goes to jest-runtime's own
 * compile, which reports errors as Jest does.
 */
const vm = require('node:vm');
const Runtime = require('jest-runtime').default;

/** filename -> the source its code cache was made from, and the cache (per worker process, for its whole life). */
const codeCache = new Map();

/** jest-runtime 30's ModuleExecutor#compile, with the code cache. */
function compileWithCache(executor, compile, scriptSource, filename) {
  const vmContext = executor.environment.getVmContext();
  if (vmContext == null || executor.resolution.isCoreModule(filename)) return compile(scriptSource, filename);
  const cached = codeCache.get(filename);
  const cachedData = cached?.source === scriptSource ? cached.data : undefined;
  let fn;
  try {
    fn = vm.compileFunction(scriptSource, executor.injectedModuleParameters, {
      filename,
      cachedData,
      produceCachedData: cachedData === undefined,
      parsingContext: vmContext,
      // as jest-runtime's compile does, its error when the VM API has no ES modules included
      importModuleDynamically: async (specifier, _function, importAttributes, ...rest) => {
        if (typeof vm.SyntheticModule !== 'function')
          throw new Error(
            'You need to run with a version of node that supports ES Modules in the VM API. See ' +
              'https://jestjs.io/docs/ecmascript-modules',
          );
        return executor.dynamicImport(specifier, filename, vmContext, importAttributes, rest[0]);
      },
    });
  } catch {
    return compile(scriptSource, filename);
  }
  if (cachedData === undefined && fn.cachedData) codeCache.set(filename, { source: scriptSource, data: fn.cachedData });
  return fn;
}

class CodeCachingRuntime extends Runtime {
  constructor(...args) {
    super(...args);
    const executor = this.executor;
    if (typeof executor?.compile !== 'function' || !Array.isArray(executor.injectedModuleParameters)) return;
    const compile = executor.compile.bind(executor);
    executor.compile = (scriptSource, filename) => compileWithCache(executor, compile, scriptSource, filename);
  }
}

module.exports = CodeCachingRuntime;
