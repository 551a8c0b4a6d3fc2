import fs from 'node:fs';
import path from 'node:path';
import { lintPackedTarball, packAndInstall, runIn } from '../../test/support/pack';
import { startServer, type RunningServer } from '../../test/support/sdk-server';

const script = (load: string) => `${load}
(async () => {
  const buyer = createBuyerClient({ baseUrl: process.env.BASE_URL });
  const { items } = await buyer.networks.list();
  let err;
  try { await buyer.resources.get('res_01JD6Z8V3K9Q2W7X4M5N6P8R0T'); } catch (e) { err = e; }
  console.log(JSON.stringify({ networks: items.map((n) => n.network), isApiError: err instanceof ApiError, code: err
    && err.code, status: err && err.status, signPayment: typeof signPayment }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('the packed buyer SDK installs and works in an empty project', () => {
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

  it('ships only dist (ESM + CJS with types) and the README, and no server code', () => {
    const installed = path.join(pkg.dir, 'node_modules/@paid-api-marketplace/sdk-buyer');
    for (const f of [
      'dist/esm/index.js',
      'dist/esm/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
      'README.md',
      'package.json',
    ])
      expect(fs.existsSync(path.join(installed, f))).toBe(true);
    expect(fs.existsSync(path.join(installed, 'src'))).toBe(false);
    expect(fs.existsSync(path.join(pkg.dir, 'node_modules/@paid-api-marketplace/server'))).toBe(false);
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
    expect(Object.keys(manifest.dependencies)).not.toContain('@paid-api-marketplace/server');
  });

  it.each([
    [
      'require (CommonJS)',
      'check.cjs',
      "const { createBuyerClient, ApiError, signPayment } = require('@paid-api-marketplace/sdk-buyer');",
    ],
    [
      'import (ESM)',
      'check.mjs',
      "import { createBuyerClient, ApiError, signPayment } from '@paid-api-marketplace/sdk-buyer';",
    ],
  ])('from %s it talks to the server and throws ApiError', async (_label, file, load) => {
    const out = JSON.parse(await runIn(pkg.dir, file, script(load), { BASE_URL: server.baseUrl }));
    expect(out).toEqual({
      networks: ['stellar:testnet', 'stellar:pubnet'],
      isApiError: true,
      code: 'RESOURCE_NOT_FOUND',
      status: 404,
      signPayment: 'function',
    });
  });

  it.each([
    [
      'require (CommonJS)',
      'mcp.cjs',
      "const { createMarketplaceMcpServer, MARKETPLACE_READ_TOOLS } = require('@paid-api-marketplace/sdk-buyer/mcp');",
    ],
    [
      'import (ESM)',
      'mcp.mjs',
      "import { createMarketplaceMcpServer, MARKETPLACE_READ_TOOLS } from '@paid-api-marketplace/sdk-buyer/mcp';",
    ],
  ])('its ./mcp export (what the marketplace server mounts at /mcp) loads from %s', async (_label, file, load) => {
    const out = JSON.parse(
      await runIn(
        pkg.dir,
        file,
        `${load}\nconsole.log(JSON.stringify({ create: typeof createMarketplaceMcpServer, tools: ` +
          `MARKETPLACE_READ_TOOLS }));\n`,
      ),
    );
    expect(out).toEqual({
      create: 'function',
      tools: ['search_resources', 'inspect_resource', 'list_supported_networks', 'get_receipt'],
    });
  });

  it(
    'is published quality: attw finds no type problems for node10, node16 (CJS and ESM) and bundler, publint ' +
      'finds nothing',
    async () => {
      const lint = await lintPackedTarball(pkg.tarball);
      expect(lint.attwEntrypoints).toContain('.');
      expect(lint.attwEntrypoints).toContain('./mcp');
      expect(lint.attwProblems).toEqual({});
      expect(lint.publint).toEqual([]);
    },
    240_000,
  );

  it('ships the Apache-2.0 license', () => {
    const installed = path.join(pkg.dir, 'node_modules/@paid-api-marketplace/sdk-buyer');
    expect(JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')).license).toBe('Apache-2.0');
    expect(fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8')).toContain('Apache License');
  });
});
