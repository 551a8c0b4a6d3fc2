/**
 * Every code block of the root README.md is run or checked here (issue #22: "every code block in the READMEs runs"):
 * - ```ts blocks of the Quickstart section are lines of examples/quickstart/*.ts, which test/e2e/quickstart.test.ts
 *   runs against a real `npm start`; the x402 stock-packages block appears verbatim (modulo indentation) below and runs;
 * - ```sh blocks name only npm scripts this repository has (and `npm start` / `npm run quickstart` are run by
 *   quickstart.test.ts);
 * - ```json blocks are MCP client configs: the clone form is started exactly as written (path and values filled in)
 *   and answers MCP; the published form names the same bin and settings.
 * A block in any other language fails the first test: it would be neither run nor checked.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import express from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactStellarScheme } from '@x402/stellar/exact/server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { normalize } from '../support/readme';
import { startMarketplace, type Marketplace } from '../support/marketplace';

const ROOT = path.resolve(__dirname, '../..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const blocks = [...README.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], code: m[2], at: m.index ?? 0 }));
const quickstartStart = README.indexOf('## Quickstart');
const quickstartEnd = README.indexOf('\n## ', quickstartStart + 1);
const inQuickstart = (b: { at: number }) => b.at > quickstartStart && b.at < quickstartEnd;

describe('README.md code blocks', () => {
  it('every block is of a kind this file runs or checks (ts, sh, json)', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(10);
    expect(blocks.filter((b) => !['ts', 'sh', 'json'].includes(b.lang)).map((b) => b.lang)).toEqual([]);
  });

  it('every line of the Quickstart ts blocks is a line of examples/quickstart (run by quickstart.test.ts)', () => {
    const dir = path.join(ROOT, 'examples/quickstart');
    const lines = new Set(
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.ts'))
        .flatMap((f) => normalize(fs.readFileSync(path.join(dir, f), 'utf8')).split('\n')),
    );
    const quick = blocks.filter((b) => b.lang === 'ts' && inQuickstart(b));
    expect(quick.length).toBeGreaterThanOrEqual(5);
    const missing = quick.flatMap((b) => normalize(b.code).split('\n')).filter((l) => !lines.has(l));
    expect(missing).toEqual([]);
  });

  it('every other ts block is in this file verbatim (its imports at the top)', () => {
    const self = normalize(fs.readFileSync(__filename, 'utf8'));
    const others = blocks.filter((b) => b.lang === 'ts' && !inQuickstart(b));
    expect(others.length).toBe(2);
    const selfLines = new Set(self.split('\n'));
    for (const b of others) {
      // imports sit at the top of this file; the statements appear as one run, in order
      const lines = normalize(b.code).split('\n');
      expect(lines.filter((l) => l.startsWith('import ') && !selfLines.has(l))).toEqual([]);
      expect(self).toContain(lines.filter((l) => !l.startsWith('import ')).join('\n'));
    }
  });

  it('every sh block runs npm scripts that exist', () => {
    const scripts = Object.keys((JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
    const builtin = ['ci', 'install', 'test', 'start'];
    const commands = blocks
      .filter((b) => b.lang === 'sh')
      .flatMap((b) => b.code.split('\n'))
      .map((l) => l.replace(/#.*$/, '').trim())
      .filter(Boolean)
      .flatMap((l) => l.split('&&').map((c) => c.trim().replace(/^([A-Z_]+=\S+\s+)+/, '')));
    expect(commands.length).toBeGreaterThanOrEqual(6);
    for (const c of commands) {
      const m = /^npm (run )?([\w:-]+)$/.exec(c);
      expect([c, m !== null]).toEqual([c, true]);
      const name = m![2];
      expect([c, m![1] ? scripts.includes(name) : builtin.includes(name) || scripts.includes(name)]).toEqual([c, true]);
    }
  });

  describe('against a running marketplace', () => {
    let m: Marketplace;
    beforeAll(async () => {
      m = await startMarketplace();
    });
    afterAll(async () => {
      await m?.stop();
    });

    it('x402: the stock packages block answers an unpaid request with 402 and the requirements from our facilitator', async () => {
      // The block names http://127.0.0.1:3000; this test's marketplace listens elsewhere: requests to that origin are
      // sent to it (the real service answers them).
      const realFetch = globalThis.fetch;
      globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
        const request = input instanceof Request ? input : new Request(input, init);
        return realFetch(request.url.startsWith('http://127.0.0.1:3000/') ? new Request(request.url.replace('http://127.0.0.1:3000', m.baseUrl), request) : request);
      }) as typeof fetch;
      try {
        const app = express();
        const payTo = 'G...'; // your signed-up seller wallet (the facilitator settles only to a seller's wallet)
        const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: 'http://127.0.0.1:3000/x402' }))
          .register('stellar:testnet', new ExactStellarScheme());
        app.use(paymentMiddleware({ 'GET /weather': { accepts: { scheme: 'exact', price: '$0.01', network: 'stellar:testnet', payTo }, resource: 'https://weather.example.com/weather' } }, server));
        app.get('/weather', (_req, res) => {
          res.json({ weather: 'sunny' });
        });
        const listening = await new Promise<import('node:http').Server>((r) => {
          const s = app.listen(0, '127.0.0.1', () => r(s));
        });
        try {
          const res = await realFetch(`http://127.0.0.1:${(listening.address() as AddressInfo).port}/weather`);
          expect(res.status).toBe(402);
          const required = JSON.parse(Buffer.from(res.headers.get('payment-required')!, 'base64').toString('utf8'));
          expect(required.accepts[0]).toMatchObject({ scheme: 'exact', network: 'stellar:testnet', payTo: 'G...', amount: '100000' });
        } finally {
          listening.closeAllConnections();
          listening.close();
        }
      } finally {
        globalThis.fetch = realFetch;
      }
    });

    it('accountability: the createAuthHeaders block sends the seller key on settle only', async () => {
      process.env.MARKETPLACE_API_KEY = 'mk_readme_test_key';
      try {
        const facilitator = new HTTPFacilitatorClient({
          url: 'http://127.0.0.1:3000/x402',
          createAuthHeaders: async () => ({ verify: {}, settle: { Authorization: `Bearer ${process.env.MARKETPLACE_API_KEY}` }, supported: {} }),
        });
        const seen: Array<{ url: string; auth: string | null }> = [];
        const realFetch = globalThis.fetch;
        globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
          const request = input instanceof Request ? input : new Request(input, init);
          seen.push({ url: request.url, auth: request.headers.get('authorization') });
          return realFetch(new Request(request.url.replace('http://127.0.0.1:3000', m.baseUrl), request));
        }) as typeof fetch;
        try {
          await facilitator.getSupported();
          await facilitator.settle({ x402Version: 2, accepted: {}, payload: {} } as never, { scheme: 'exact', network: 'stellar:testnet', amount: '1', asset: 'C', payTo: 'G', maxTimeoutSeconds: 60, extra: {} } as never).catch(() => undefined);
        } finally {
          globalThis.fetch = realFetch;
        }
        expect(seen.find((r) => r.url.endsWith('/x402/supported'))?.auth ?? null).toBeNull();
        expect(seen.find((r) => r.url.endsWith('/x402/settle'))?.auth).toBe('Bearer mk_readme_test_key');
      } finally {
        delete process.env.MARKETPLACE_API_KEY;
      }
    });

    it('MCP: the clone form starts as written and serves the marketplace tools with the wallet; the published form names the same bin and settings', async () => {
      const configs = blocks.filter((b) => b.lang === 'json').map((b) => JSON.parse(b.code) as { mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }> });
      expect(configs).toHaveLength(2);
      const [clone, published] = configs.map((c) => c.mcpServers['paid-api-marketplace']);
      expect(published.command).toBe('npx');
      expect(published.args).toEqual(['-y', '-p', '@paid-api-marketplace/sdk-buyer', 'paid-api-marketplace-mcp']);
      expect(published.env).toEqual(clone.env);
      const bin = JSON.parse(fs.readFileSync(path.join(ROOT, 'sdk-buyer/package.json'), 'utf8')).bin['paid-api-marketplace-mcp'];
      expect(clone.args).toEqual([`/path/to/clone/sdk-buyer/${bin}`]);

      const wallet = Keypair.random();
      await m.network.faucet(wallet.publicKey(), 'USDC', '1');
      const transport = new StdioClientTransport({
        command: clone.command === 'node' ? process.execPath : clone.command,
        args: clone.args.map((a) => a.replace('/path/to/clone', ROOT)),
        env: { ...clone.env, PATH: process.env.PATH ?? '', MARKETPLACE_URL: m.baseUrl, MARKETPLACE_WALLET_SECRET: wallet.secret() },
        stderr: 'pipe',
      });
      const client = new Client({ name: 'readme-test', version: '1.0.0' });
      await client.connect(transport);
      try {
        const tools = (await client.listTools()).tools.map((t) => t.name).sort();
        expect(tools).toEqual(['call_paid_resource', 'get_receipt', 'inspect_resource', 'list_supported_networks', 'search_resources']);
        const networks = await client.callTool({ name: 'list_supported_networks', arguments: {} });
        expect(networks.isError).toBeFalsy();
      } finally {
        await client.close();
      }
    });
  });
});
