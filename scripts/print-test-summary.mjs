// Prints the plain closing line "N passed, N failed" from Jest's JSON results (written by `npm test`).
import fs from 'node:fs';
const file = new URL('../.data/jest-results.json', import.meta.url);
const r = JSON.parse(fs.readFileSync(file, 'utf8'));
console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);
process.exit(r.success ? 0 : 1);
