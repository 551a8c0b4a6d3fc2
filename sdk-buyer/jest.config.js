/**
 * SDK tests run against the REAL server, built in-process with the server's test helper (server/test/support),
 * on the embedded PostgreSQL the server's globalSetup starts (or DATABASE_URL). Sources are TypeScript through
 * SWC; `.js` suffixes of ESM-style relative imports are mapped back to the .ts sources.
 */
/** @type {import('jest').Config} */
module.exports = {
  rootDir: __dirname,
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj)sx?$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(agenda|@agendajs|cron-parser|human-interval|date\\.js)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/../server/test/support/global-teardown.ts',
  testTimeout: 120000,
};
