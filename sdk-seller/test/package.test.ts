import fs from 'node:fs';
import path from 'node:path';
import { lintPackedTarball, packAndInstall, runIn } from '../../test/support/pack';
import { startServer, type RunningServer } from '../../test/support/sdk-server';

const script = (load: string) => `${load}
(async () => {
  const seller = createSellerClient({ baseUrl: process.env.BASE_URL, apiKey:
    'mk_wrong_key_0000000000000000000000000000000000' });
  let err;
  try { await seller.resources.list(); } catch (e) { err = e; }
  console.log(JSON.stringify({ isApiError: err instanceof ApiError, code: err && err.code, status: err && err.status,
    paywall: typeof paywall, leaks: JSON.stringify(err).includes('mk_wrong_key') }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('the packed seller SDK installs and works in an empty project', () => {
  let server: RunningServer;
  let pkg: ReturnType<typeof packAndInstall>;
  beforeAll(async () => {
    server = await startServer();
    pkg = packAndInstall(path.resolve(__dirname, '..'));
  }, 240_000);
  afterAll(async () => {
    pkg?.cleanup();
    await server?.close();
  });

  it('ships only dist (ESM + CJS with types) and the README; express is a peer, not bundled', () => {
    const installed = path.join(pkg.dir, 'node_modules/@paid-api-marketplace/sdk-seller');
    for (const f of [
      'dist/esm/index.js',
      'dist/esm/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
      'README.md',
    ])
      expect(fs.existsSync(path.join(installed, f))).toBe(true);
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
    expect(manifest.dependencies.express).toBeUndefined();
    expect(manifest.peerDependencies.express).toBeDefined();
  });

  it.each([
    [
      'require (CommonJS)',
      'check.cjs',
      "const { createSellerClient, ApiError, paywall } = require('@paid-api-marketplace/sdk-seller');",
    ],
    [
      'import (ESM)',
      'check.mjs',
      "import { createSellerClient, ApiError, paywall } from '@paid-api-marketplace/sdk-seller';",
    ],
  ])('from %s it talks to the server and throws ApiError without the key', async (_label, file, load) => {
    const out = JSON.parse(await runIn(pkg.dir, file, script(load), { BASE_URL: server.baseUrl }));
    expect(out).toEqual({ isApiError: true, code: 'UNAUTHORIZED', status: 401, paywall: 'function', leaks: false });
  });

  it(
    'is published quality: attw finds no type problems for node10, node16 (CJS and ESM) and bundler, publint ' +
      'finds nothing',
    async () => {
      const lint = await lintPackedTarball(pkg.tarball);
      expect(lint.attwEntrypoints).toContain('.');
      expect(lint.attwProblems).toEqual({});
      expect(lint.publint).toEqual([]);
    },
    240_000,
  );

  it('ships the Apache-2.0 license', () => {
    const installed = path.join(pkg.dir, 'node_modules/@paid-api-marketplace/sdk-seller');
    expect(JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')).license).toBe('Apache-2.0');
    expect(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8')).toContain('Apache License');
  });
});
