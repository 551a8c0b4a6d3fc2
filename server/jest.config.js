/**
 * The server suite. Shared settings: test/jest.base.js. `npm test -w server` runs it through
 * scripts/run-jest.mjs: most files on parallel Jest workers, the files in its SERIAL_TESTS alone afterwards.
 * `npx jest -c server/jest.config.js <file>` runs any single file.
 */
module.exports = require('../test/jest.base.js')(__dirname, 'test', { testTimeout: 60000 });
