/**
 * The server suite. Shared settings: test/jest.base.js. `npm test -w server` runs it through
 * scripts/run-jest.mjs: most files on parallel Jest workers, the files in its SERIAL_TESTS alone afterwards.
 * `npx jest -c server/jest.config.js <file>` runs any single file.
 *
 * testTimeout (which also bounds beforeAll/afterAll hooks): 180 s. It is a bound on a hang, never an assertion: on a
 * busy machine (measured at load average 20-30 on 2 cores, other engineers' type checks running) a file's beforeAll
 * that starts the service took over 60 s, the former bound, and failed 33 of 84 files with nothing wrong in them.
 */
module.exports = require('../test/jest.base.js')(__dirname, 'test', { testTimeout: 180000 });
