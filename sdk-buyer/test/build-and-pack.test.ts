import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// No test rebuilds the real dist/ (suites share it): these run the build's last step and the prepack script on copies.
const repo = path.resolve(__dirname, '../..');

describe('the SDK build and npm pack', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-build-'));
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  it.each(['sdk-buyer', 'sdk-seller'])(
    'after any rebuild of %s every bin is executable (the build sets the mode, not the root prepare)',
    (pkg) => {
      const dist = path.join(tmp, 'dist');
      fs.mkdirSync(path.join(dist, 'esm'), { recursive: true });
      fs.mkdirSync(path.join(dist, 'cjs', 'bin'), { recursive: true });
      const bin = path.join(dist, 'cjs', 'bin', 'some-bin.js');
      fs.writeFileSync(bin, '#!/usr/bin/env node\n', { mode: 0o644 }); // what tsc writes
      execFileSync(process.execPath, [path.join(repo, pkg, 'scripts/finish-build.mjs'), dist]);
      expect(fs.statSync(bin).mode & 0o777).toBe(0o755);
    },
  );

  function fakePackage(name: string, sourceNewer: boolean): string {
    const dir = path.join(tmp, name);
    fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'dist/cjs'), { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({
        name,
        version: '0.0.0',
        scripts: { build: "node -e \"require('fs').writeFileSync('built','')\"" },
      }),
    );
    fs.writeFileSync(path.join(dir, 'src/index.ts'), 'export {};\n');
    fs.writeFileSync(path.join(dir, 'dist/cjs/index.js'), '');
    const old = new Date(Date.now() - 60_000);
    const recent = new Date();
    for (const f of ['package.json', 'src/index.ts', 'src'])
      fs.utimesSync(path.join(dir, f), sourceNewer ? recent : old, sourceNewer ? recent : old);
    fs.utimesSync(path.join(dir, 'dist/cjs/index.js'), sourceNewer ? old : recent, sourceNewer ? old : recent);
    return dir;
  }

  it('npm pack does not rebuild when dist/ is newer than every source (prepack skips the build)', () => {
    const dir = fakePackage('sdk-buyer', false);
    const out = execFileSync(process.execPath, [path.join(repo, 'scripts/build-sdk-if-stale.mjs')], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toBe('');
    expect(fs.existsSync(path.join(dir, 'built'))).toBe(false);
  });

  it('npm pack rebuilds when a source is newer than dist/', () => {
    const dir = fakePackage('sdk-buyer', true);
    execFileSync(process.execPath, [path.join(repo, 'scripts/build-sdk-if-stale.mjs')], { cwd: dir, stdio: 'ignore' });
    expect(fs.existsSync(path.join(dir, 'built'))).toBe(true);
  });

  it.each(['sdk-buyer', 'sdk-seller'])('%s packs through the staleness check', (pkg) => {
    expect(JSON.parse(fs.readFileSync(path.join(repo, pkg, 'package.json'), 'utf8')).scripts.prepack).toBe(
      'node ../scripts/build-sdk-if-stale.mjs',
    );
  });
});
