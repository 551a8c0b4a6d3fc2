/**
 * Cross-package end-to-end tests: the real server (in-process, its test helper and embedded PostgreSQL) and the
 * local Stellar network, driven through both SDKs' sources. Run: `npm run test:e2e`. Shared settings: jest.base.js.
 */
module.exports = require('./jest.base.js')(__dirname, 'e2e');
