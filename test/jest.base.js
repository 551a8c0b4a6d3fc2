/**
 * The one Jest configuration shared by every suite (server/jest.config.js, sdk-buyer, sdk-seller and the end-to-end
 * suite test/jest.config.js): TypeScript through SWC (agenda and its backends are ESM-only, so they are transformed
 * too), `.js` suffixes of ESM-style relative imports mapped back to the .ts sources (the MCP mount imports the buyer
 * SDK's sources), and a real PostgreSQL per run with one migrated template database that each test file clones
 * (server/test/support/global-setup.ts).
 * `forceExit`: Agenda 6's drain() leaves its per-job scheduling timers behind, which keeps a finished run alive
 * (seen on the job-system tests). The server itself exits explicitly on SIGTERM.
 */
const path = require('node:path');

/** @returns {import('jest').Config} */
module.exports = function sharedJestConfig(rootDir, testsDir, overrides = {}) {
  return {
    rootDir,
    testEnvironment: 'node',
    roots: [`<rootDir>/${testsDir}`],
    testMatch: ['**/*.test.ts'],
    transform: {
      '^.+\\.(t|j|mj)sx?$': [
        '@swc/jest',
        { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
      ],
    },
    transformIgnorePatterns: ['/node_modules/(?!(agenda|@agendajs|cron-parser|human-interval|date\\.js|jose)/)'],
    moduleNameMapper: {
      '^(\\.{1,2}/.*)\\.js$': '$1',
      // The buyer SDK's `./mcp` export, as the in-process server imports it, read from its source (see
      // server/jest.config.js).
      '^@paid-api-marketplace/sdk-buyer/mcp$': path.join(__dirname, '../sdk-buyer/src/mcp/marketplace-server.ts'),
      // The local Stellar network (its own workspace package): tests run its source, as tsx does through the
      // tsconfig `paths` (tsconfig.base.json); the compiled server (`npm start`) loads its dist/.
      '^@paid-api-marketplace/local-network$': path.join(__dirname, '../local-network/src/index.ts'),
      // express-openapi-validator's spec validator, compiled only if used (it is not: validateApiSpec is false); see
      // the file.
      '^\\./openapi\\.schema\\.validator$': path.join(__dirname, 'lazy-openapi-schema-validator.cjs'),
      // express-openapi-validator's schema preprocessor without the Ajv compiles whose result it drops (see the file).
      '^\\.(/middlewares)?/parsers/schema\\.preprocessor$': path.join(__dirname, 'eov-schema-preprocessor.cjs'),
      // express-openapi-validator's bundle of the bundled spec at each app start, once per worker (see the file).
      '^@apidevtools/json-schema-ref-parser$': path.join(__dirname, 'eov-ref-parser.cjs'),
    },
    // jest-runtime with a V8 code cache per worker: later test files compile modules from it (see the file).
    runtime: path.join(__dirname, 'jest-runtime-code-cache.cjs'),
    moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
    globalSetup: path.join(__dirname, '../server/test/support/global-setup.ts'),
    globalTeardown: path.join(__dirname, '../server/test/support/global-teardown.ts'),
    testTimeout: 120000,
    forceExit: true,
    ...overrides,
  };
};
