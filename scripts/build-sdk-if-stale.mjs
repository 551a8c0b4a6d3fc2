#!/usr/bin/env node
// An SDK's `prepack` (issue 32): `npm pack` / `npm publish` rebuild dist/ only when a file the build reads (the
// package's src/, its tsconfig files and package.json; for the seller SDK also the buyer SDK's core and receipts
// it copies) is newer than dist/cjs/index.js. A fresh dist/ is packed as it is, so `npm pack` takes about a second.
// `FORCE_BUILD=1 npm pack` always rebuilds. Run from the package folder (npm runs prepack there).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const pkgDir = process.cwd();
const name = path.basename(pkgDir);
const inputs = [
  path.join(pkgDir, 'src'),
  path.join(pkgDir, 'package.json'),
  ...fs
    .readdirSync(pkgDir)
    .filter((f) => /^tsconfig.*\.json$/.test(f))
    .map((f) => path.join(pkgDir, f)),
];
if (name === 'sdk-seller')
  inputs.push(path.join(pkgDir, '../sdk-buyer/src/core'), path.join(pkgDir, '../sdk-buyer/src/receipts'));

function newest(p) {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(
    st.mtimeMs,
    ...fs.readdirSync(p, { recursive: true, encoding: 'utf8' }).map((f) => fs.statSync(path.join(p, f)).mtimeMs),
  );
}

const built = fs.statSync(path.join(pkgDir, 'dist/cjs/index.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
const source = Math.max(...inputs.map(newest));
if (process.env.FORCE_BUILD === '1' || source > built) {
  console.error(`${name}: dist/ is older than its sources, building (npm run build)`);
  execFileSync('npm', ['run', 'build'], { cwd: pkgDir, stdio: 'inherit' });
} else {
  console.error(`${name}: dist/ is fresh, packing it as built (FORCE_BUILD=1 rebuilds)`);
}
