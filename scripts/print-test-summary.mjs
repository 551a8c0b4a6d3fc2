// Prints the plain closing line "N passed, N failed" over every Jest run of `npm test` (their JSON results).
import fs from 'node:fs';
const runs = ['jest-server', 'jest-sdk-buyer', 'jest-sdk-seller', 'jest-e2e', 'jest-local-network'];
let passed = 0,
  failed = 0,
  skipped = 0,
  ok = true;
for (const run of runs) {
  const file = new URL(`../.data/${run}.json`, import.meta.url);
  if (!fs.existsSync(file)) {
    console.error(`missing results: .data/${run}.json`);
    ok = false;
    continue;
  }
  const r = JSON.parse(fs.readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests + r.numRuntimeErrorTestSuites;
  skipped += r.numPendingTests;
  ok &&= r.success;
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(ok ? 0 : 1);
