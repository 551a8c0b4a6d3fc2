/**
 * Cross-package end-to-end tests: the real server (in-process, its test helper and embedded PostgreSQL) and the
 * local Stellar network, driven through both SDKs' sources. Run: `npx jest -c test/jest.config.js`.
 */
/** @type {import('jest').Config} */
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  roots: ['<rootDir>/e2e'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj)sx?$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(agenda|@agendajs|cron-parser|human-interval|date\\.js)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  globalSetup: '<rootDir>/support/global-setup.ts',
  globalTeardown: '<rootDir>/../server/test/support/global-teardown.ts',
  testTimeout: 120000,
  // The service with runJobs (Agenda) leaves a handle open after stop(); detectOpenHandles names none. Until the
  // server side is fixed, do not let a finished run hang 'npm test'.
  forceExit: true,
};
