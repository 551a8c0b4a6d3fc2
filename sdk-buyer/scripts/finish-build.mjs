// Marks dist/esm as ES modules and dist/cjs as CommonJS, so Node loads each build with the right loader whatever
// the package's own "type" is. Run after both tsc builds (see package.json "build").
import fs from 'node:fs';
import path from 'node:path';
const dist = path.resolve(process.argv[2] ?? 'dist');
fs.writeFileSync(path.join(dist, 'esm', 'package.json'), JSON.stringify({ type: 'module' }) + '\n');
fs.writeFileSync(path.join(dist, 'cjs', 'package.json'), JSON.stringify({ type: 'commonjs' }) + '\n');
