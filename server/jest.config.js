/** Jest runs the TypeScript sources through SWC. agenda 6 and its backends are ESM-only, so they are transformed too. */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj)sx?$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(agenda|@agendajs|cron-parser|human-interval|date\\.js|jose)/)'],
  // The MCP mount imports the buyer SDK's sources (server/src/http/mcp/mount.ts), whose ESM-style imports end in .js.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
};
// `npm test` runs Jest with --forceExit: Agenda 6's drain() leaves its per-job scheduling timers behind, which
// keeps a finished run alive (seen on the job-system tests). The server itself exits explicitly on SIGTERM.
