/**
 * The SDK's tests run against the REAL server, built in-process with the server's test helper, on a real
 * embedded PostgreSQL. Shared settings: test/jest.base.js.
 */
module.exports = require('../test/jest.base.js')(__dirname, 'test');
