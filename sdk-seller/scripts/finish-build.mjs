// Marks dist/esm as ES modules and dist/cjs as CommonJS, so Node loads each build with the right loader whatever
// the package's own "type" is. Run after both tsc builds (see package.json "build").
import fs from 'node:fs';
import path from 'node:path';
const dist = path.resolve(process.argv[2] ?? 'dist');
fs.writeFileSync(path.join(dist, 'esm', 'package.json'), JSON.stringify({ type: 'module' }) + '\n');
fs.writeFileSync(path.join(dist, 'cjs', 'package.json'), JSON.stringify({ type: 'commonjs' }) + '\n');
// Every bin (dist/cjs/bin/*.js, package.json "bin") is executable from the build itself: `npm run build`,
// `npm pack` and `npm ci` all leave `npx <bin>` runnable, not only the root `prepare` (issue 32).
const bins = path.join(dist, 'cjs', 'bin');
for (const f of fs.existsSync(bins) ? fs.readdirSync(bins) : [])
  if (f.endsWith('.js')) fs.chmodSync(path.join(bins, f), 0o755);
