import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * `npm pack --ignore-scripts` the package's dist/ (esm + cjs, built by its `build` script: at `npm ci` by the root
 * `prepare`, and again by `npm test`'s pretest when src/ is newer, scripts/build-sdks-if-stale.mjs) and install the
 * tarball into an empty temp project. Packing does not rebuild, so suites can run side by side while others read
 * this dist/. The install is `npm install --offline --no-audit <tarball>` from the local npm cache; when the cache
 * lacks a packument (a fresh machine), it falls back to `--prefer-offline`, which fetches only what is missing.
 * Nothing is taken from the monorepo's node_modules, so this proves the tarball's own dependency list is complete.
 */
export function packAndInstall(packageDir: string): {
  dir: string;
  tarball: string;
  installMode: string;
  cleanup(): void;
} {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-pack-'));
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const env = {
    ...process.env,
    npm_config_loglevel: 'error',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  const out = execFileSync(npm, ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], {
    cwd: packageDir,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const filename = (JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string }>)[0].filename
    .replace(/^@/, '')
    .replace(/\//, '-');
  const tarball = path.join(dir, filename);
  fs.writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'sdk-pack-consumer', version: '1.0.0', private: true }),
  );
  let installMode = '--offline';
  try {
    execFileSync(npm, ['install', '--offline', '--no-audit', tarball], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 180_000,
    });
  } catch {
    installMode = '--prefer-offline';
    execFileSync(npm, ['install', '--prefer-offline', '--no-audit', tarball], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 180_000,
    });
  }
  return { dir, tarball, installMode, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs a script in the temp project (`.cjs` -> require, `.mjs` -> import) and returns its stdout. Asynchronous on
 * purpose: the script calls the test server running in this process, which must keep serving meanwhile.
 */
export async function runIn(
  dir: string,
  file: string,
  source: string,
  env: Record<string, string> = {},
): Promise<string> {
  fs.writeFileSync(path.join(dir, file), source);
  const { stdout } = await promisify(execFile)(process.execPath, [file], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return stdout;
}

export interface PackageLint {
  /** @arethetypeswrong/cli problems (node10, node16 from CJS and ESM, bundler resolution), by kind. */
  attwProblems: Record<string, unknown>;
  /** Entry points attw resolved, with the module kind per resolution mode. */
  attwEntrypoints: string[];
  /** publint messages (errors, warnings and suggestions) on the packed tarball. */
  publint: Array<{ code: string; type: string; path: string[] }>;
}

/**
 * Publishing quality of a packed tarball: `attw <tarball> --format json` (types resolve for ESM and CJS consumers
 * under node10, node16 and bundler resolution) and publint on the same tarball (exports, files, module types).
 * Both tools are the root dev dependencies; they read only the tarball.
 */
export async function lintPackedTarball(tarball: string): Promise<PackageLint> {
  const root = path.resolve(__dirname, '../..');
  const run = promisify(execFile);
  const attw = await run(
    process.execPath,
    [path.join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js'), tarball, '--format', 'json'],
    {
      cwd: root,
      encoding: 'utf8',
      timeout: 120_000,
      maxBuffer: 64 * 1024 * 1024,
    },
  ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '{}' }));
  const report = JSON.parse(attw.stdout) as {
    problems?: Record<string, unknown>;
    analysis?: { entrypoints?: Record<string, unknown> };
  };
  const publintScript = `import('publint').then(async ({ publint }) => {
    const b = require('node:fs').readFileSync(process.argv[1]);
    const r = await publint({ pack: { tarball: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) }, level:
      'suggestion', strict: true });
    process.stdout.write(JSON.stringify(r.messages));
  }).catch((e) => { console.error(e); process.exit(1); });`;
  const pub = await run(process.execPath, ['-e', publintScript, tarball], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return {
    attwProblems: report.problems ?? { error: 'attw printed no report' },
    attwEntrypoints: Object.keys(report.analysis?.entrypoints ?? {}),
    publint: JSON.parse(pub.stdout) as PackageLint['publint'],
  };
}
