/**
 * Issue #22 item 2: after `npm ci` in a clone, the SDKs import (ESM and CommonJS, from their built dist) and
 * `npx paid-api-marketplace-mcp` runs. `npm ci` runs the root `prepare` script, which builds both SDKs (`npm test` on
 * a fresh clone is `npm ci` + `npm test`, and `npm test`'s pretest builds an SDK again when its src/ changed since:
 * scripts/build-sdks-if-stale.mjs). This test checks that `prepare` is that build, then uses what it built exactly as
 * a newcomer would from the clone's root. It does not rebuild dist/ itself: other suites read it meanwhile.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
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

  it('the local network package resolves to its build, the one the compiled server (`npm start`) loads', () => {
    const cjs = spawnSync(
      process.execPath,
      [
        '-e',
        "const n = require('@paid-api-marketplace/local-network'); " +
          "console.log(require.resolve('@paid-api-marketplace/local-network'), typeof n.startLocalNetwork)",
      ],
      { cwd: path.join(ROOT, 'server'), encoding: 'utf8' },
    );
    expect(cjs.stdout.trim()).toMatch(/local-network\/dist\/index\.js function$/);
  });

  it('npx paid-api-marketplace-local-network runs the network from its build and it answers Soroban RPC', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'clone-local-network-'));
    const child = spawn('npx', ['--no-install', 'paid-api-marketplace-local-network'], {
      cwd: ROOT,
      detached: true,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        LOCAL_NETWORK_PORT: '0',
        LOCAL_NETWORK_DATA_FILE: path.join(dir, 'local-network.json'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 60_000;
      while (!/issuer secret/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain('local simulation (not testnet, not mainnet)');
      const rpcUrl = /RPC URL:\s+(\S+)/.exec(out)?.[1];
      expect(rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rpc$/);
      const answer = await fetch(rpcUrl!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getNetwork' }),
      });
      expect(((await answer.json()) as { result: { passphrase: string } }).result.passphrase).toBe(
        'Test SDF Network ; September 2015',
      );
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
