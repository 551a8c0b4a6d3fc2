/**
 * The Jest configuration shared by the SDK suites and the end-to-end suite: TypeScript through SWC (agenda and its
 * backends are ESM-only, so they are transformed too), `.js` suffixes of ESM-style relative imports mapped back to
 * the .ts sources, and a real embedded PostgreSQL per run (test/support/global-setup.ts).
 * `forceExit`: Agenda's drain() leaves its scheduling timers behind (see server/jest.config.js).
 */
const path = require('node:path');

/** @returns {import('jest').Config} */
module.exports = function sharedJestConfig(rootDir, testsDir) {
  return {
    rootDir,
    testEnvironment: 'node',
    roots: [`<rootDir>/${testsDir}`],
    testMatch: ['**/*.test.ts'],
    transform: {
      '^.+\\.(t|j|mj)sx?$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
    },
    transformIgnorePatterns: ['/node_modules/(?!(agenda|@agendajs|cron-parser|human-interval|date\\.js|jose)/)'],
    moduleNameMapper: {
      '^(\\.{1,2}/.*)\\.js$': '$1',
      // The buyer SDK's `./mcp` export, as the in-process server imports it, read from its source (see server/jest.config.js).
      '^@paid-api-marketplace/sdk-buyer/mcp$': path.join(__dirname, '../sdk-buyer/src/mcp/marketplace-server.ts'),
    },
    moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
    globalSetup: path.join(__dirname, 'support/global-setup.ts'),
    globalTeardown: path.join(__dirname, '../server/test/support/global-teardown.ts'),
    testTimeout: 120000,
    forceExit: true,
  };
};
