/**
 * Issue #22 item 2: after `npm ci` in a clone, the SDKs import (ESM and CommonJS, from their built dist) and
 * `npx paid-api-marketplace-mcp` runs. `npm ci` runs the root `prepare` script, which builds both SDKs (`npm test` on
 * a fresh clone is `npm ci` + `npm test`, and `npm test`'s pretest builds an SDK again when its src/ changed since:
 * scripts/build-sdks-if-stale.mjs). This test checks that `prepare` is that build, then uses what it built exactly as
 * a newcomer would from the clone's root. It does not rebuild dist/ itself: other suites read it meanwhile.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const ROOT = path.resolve(__dirname, '../..');

describe('a clone after npm ci', () => {
  beforeAll(() => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.prepare).toContain('build -w sdk-buyer -w sdk-seller');
  });

  it('imports both SDKs from ESM and from CommonJS (their dist, built by the install)', () => {
    const esm = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const b = await import('@paid-api-marketplace/sdk-buyer'); const s = await " +
          "import('@paid-api-marketplace/sdk-seller'); console.log(typeof b.createBuyerClient, typeof " +
          's.createSellerClient, typeof s.checkWalletReadiness);',
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(esm.stderr).toBe('');
    expect(esm.stdout.trim()).toBe('function function function');
    const cjs = spawnSync(
      process.execPath,
      [
        '-e',
        "console.log(require.resolve('@paid-api-marketplace/sdk-buyer'), typeof " +
          "require('@paid-api-marketplace/sdk-seller').paywall)",
      ],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(cjs.stdout.trim()).toMatch(/sdk-buyer\/dist\/cjs\/index\.js function$/);
  });

  it('npx paid-api-marketplace-mcp runs the bin from the clone and answers MCP', async () => {
    const transport = new StdioClientTransport({
      command: 'npx',
      args: ['--no-install', 'paid-api-marketplace-mcp'],
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', MARKETPLACE_URL: 'http://127.0.0.1:9' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'clone-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name).sort();
      // no wallet configured: the read-only tools
      expect(tools).toEqual(['get_receipt', 'inspect_resource', 'list_supported_networks', 'search_resources']);
    } finally {
      await client.close();
    }
  });
});
