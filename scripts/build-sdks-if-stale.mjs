#!/usr/bin/env node
// Builds the SDKs' and the local network's dist/ (the root `prepare`) when a file of a package's src/ (or of the SDK
// core it copies) is newer than its build, before any test runs (`npm test`'s pretest). The SDK and end-to-end tests
// import and pack the built dist/ and never rebuild it themselves, so suites can run side by side while they read it.
// After `npm ci` (whose root `prepare` builds both SDKs and the local network) nothing is stale and this does nothing.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const newest = (dir) =>
  Math.max(
    0,
    ...fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => fs.statSync(path.join(dir, f)).mtimeMs),
  );
const sources = {
  'sdk-buyer': ['sdk-buyer/src'],
  'sdk-seller': ['sdk-seller/src', 'sdk-buyer/src/core', 'sdk-buyer/src/receipts'],
  // The local network's build is what the compiled server (`npm start`) and the scripts run from the repository
  // root (`tsx scripts/...`) load; tests read its src/ (test/jest.base.js).
  'local-network': ['local-network/src'],
};
const builtFile = { 'local-network': 'dist/index.js' };

const stale = Object.entries(sources).filter(([pkg, dirs]) => {
  const entry = path.join(root, pkg, builtFile[pkg] ?? 'dist/cjs/index.js');
  const built = fs.statSync(entry, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  return Math.max(...dirs.map((d) => newest(path.join(root, d)))) > built;
});
if (stale.length) {
  // the root `prepare`, as `npm ci` runs it: both builds, the bin's mode and its link
  console.error(`${stale.map(([pkg]) => pkg).join(', ')}: src/ is newer than dist/, building (npm run prepare)`);
  execFileSync('npm', ['run', 'prepare'], { cwd: root, stdio: 'inherit' });
}
