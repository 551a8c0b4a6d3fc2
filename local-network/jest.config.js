/**
 * The local network's own suite (`npm test -w local-network`, run by the root `npm test` through
 * scripts/run-jest.mjs): the ledger rules, the RPC methods and the conveniences, against networks started in the
 * test process. Shared settings: test/jest.base.js, without its PostgreSQL (the network needs none).
 */
module.exports = require('../test/jest.base.js')(__dirname, 'test', {
  globalSetup: undefined,
  globalTeardown: undefined,
  testTimeout: 60000,
});
