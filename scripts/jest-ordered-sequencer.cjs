// Jest's test sequencer for scripts/run-jest.mjs's serial run: files in the order of TEST_ORDER (a JSON array of
// path prefixes relative to the repository, longest file first), the rest after them in Jest's own order. Jest's
// default puts the slowest file of its last run first, but on a fresh clone it has no timings and orders by file size,
// so a long file could start last and run alone while the other worker idles.
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = path.resolve(__dirname, '..');

class OrderedSequencer extends Sequencer {
  async sort(tests) {
    const jestOrder = await super.sort(tests);
    const order = JSON.parse(process.env.TEST_ORDER ?? '[]');
    const rank = (test) => {
      const rel = path.relative(ROOT, test.path).split(path.sep).join('/');
      const i = order.findIndex((prefix) => rel.startsWith(prefix));
      return i < 0 ? order.length : i;
    };
    // Array.prototype.sort is stable: files of one prefix (a folder) keep Jest's order.
    return [...jestOrder].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = OrderedSequencer;
