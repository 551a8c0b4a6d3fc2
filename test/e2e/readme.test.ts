/**
 * Every code block of the root README.md and of server/README.md (the service's manual, where the x402, payment
 * guarantees and MCP sections live) is run or checked here (issue #22: "every code block in the READMEs runs"):
 * - ```ts blocks of the root Quickstart section are lines of examples/quickstart/*.ts, which
 *   test/e2e/quickstart.test.ts runs against a real `npm start`; the x402 stock-packages block and the
 *   createAuthHeaders block of server/README.md appear verbatim (modulo indentation) below and run;
 * - ```sh blocks name only npm scripts this repository has (and `npm start` / `npm run quickstart` are run by
 *   quickstart.test.ts), except the block of "REST in six requests", which rest-route.test.ts runs with bash;
 * - ```json blocks are MCP client configs: the clone form is started exactly as written (path and values filled in)
 *   and answers MCP; the published form names the same bin and settings.
 * A block in any other language fails the first test: it would be neither run nor checked.
 *
 * The root README's architecture map (issue #23) is checked too: every operationId of the bundled contract has its
 * row, and every repository path the READMEs name (and every function the map names in a file) exists, so a file
 * that moves without its map row fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import express from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactStellarScheme } from '@x402/stellar/exact/server';
import { adaptStellarServerScheme } from '@paid-api-marketplace/sdk-seller';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { normalize } from '../support/readme';
import { startMarketplace, type Marketplace } from '../support/marketplace';

const ROOT = path.resolve(__dirname, '../..');
/** The READMEs whose code blocks this file runs or checks: the root one and the server's manual. */
const DOCS = ['README.md', 'server/README.md'];
/** Every README whose repository paths and links are checked (the benches' page has no code block). */
const LINKED_DOCS = [...DOCS, 'scripts/bench/README.md'];
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const blocks = DOCS.flatMap((doc) =>
  [...fs.readFileSync(path.join(ROOT, doc), 'utf8').matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({
    doc,
    lang: m[1],
    code: m[2],
    at: m.index ?? 0,
  })),
);
const quickstartStart = README.indexOf('## Quickstart');
const quickstartEnd = README.indexOf('\n## ', quickstartStart + 1);
const inQuickstart = (b: { doc: string; at: number }) =>
  b.doc === 'README.md' && b.at > quickstartStart && b.at < quickstartEnd;
// "REST in six requests" (issue 32) is one sh block of curl lines that test/e2e/rest-route.test.ts runs as it is.
const restStart = README.indexOf('### REST in six requests');
const restEnd = README.indexOf('\n##', restStart + 1);
const inRestSection = (b: { doc: string; at: number }) =>
  restStart >= 0 && b.doc === 'README.md' && b.at > restStart && b.at < restEnd;

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
    const scripts = Object.keys(
      (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
        .scripts,
    );
    const builtin = ['ci', 'install', 'test', 'start'];
    const commands = blocks
      .filter((b) => b.lang === 'sh' && !inRestSection(b))
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

    it(
      'x402: the stock packages block answers an unpaid request with 402 and the requirements from our ' +
        'facilitator',
      async () => {
        // The block names http://127.0.0.1:3000; this test's marketplace listens elsewhere: requests to that origin are
        // sent to it (the real service answers them).
        const realFetch = globalThis.fetch;
        globalThis.fetch = ((input: RequestInfo | URL, init?: RequestInit) => {
          const request = input instanceof Request ? input : new Request(input, init);
          return realFetch(
            request.url.startsWith('http://127.0.0.1:3000/')
              ? new Request(request.url.replace('http://127.0.0.1:3000', m.baseUrl), request)
              : request,
          );
        }) as typeof fetch;
        try {
          const app = express();
          const payTo = 'G...'; // your signed-up seller wallet (the facilitator settles only to a seller's wallet)
          // Your seller API key (a payments-scoped key is enough): an uncataloged URL settles only when you ask.
          const auth = { Authorization: `Bearer ${process.env.MARKETPLACE_API_KEY}` };
          const facilitator = new HTTPFacilitatorClient({
            url: 'http://127.0.0.1:3000/x402',
            createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: {} }),
          });
          // @x402/express 2.27 needs members the registry's @x402/stellar 2.9 lacks: the seller SDK adds them.
          const server = new x402ResourceServer(facilitator).register(
            'stellar:testnet',
            adaptStellarServerScheme(new ExactStellarScheme()),
          );
          app.use(
            paymentMiddleware(
              {
                'GET /weather': {
                  accepts: { scheme: 'exact', price: '$0.01', network: 'stellar:testnet', payTo },
                  resource: 'https://weather.example.com/weather',
                },
              },
              server,
            ),
          );
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
            expect(required.accepts[0]).toMatchObject({
              scheme: 'exact',
              network: 'stellar:testnet',
              payTo: 'G...',
              amount: '100000',
            });
          } finally {
            listening.closeAllConnections();
            listening.close();
          }
        } finally {
          globalThis.fetch = realFetch;
        }
      },
    );

    it(
      'accountability: the createAuthHeaders block sends the seller key on verify and settle (whatever settle ' +
        'refuses, verify refuses), not on supported',
      async () => {
        process.env.MARKETPLACE_API_KEY = 'mk_readme_test_key';
        try {
          const facilitator = new HTTPFacilitatorClient({
            url: 'http://127.0.0.1:3000/x402',
            createAuthHeaders: async () => {
              const auth = { Authorization: `Bearer ${process.env.MARKETPLACE_API_KEY}` };
              return { verify: auth, settle: auth, supported: {} };
            },
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
            await facilitator
              .verify(
                { x402Version: 2, accepted: {}, payload: {} } as never,
                {
                  scheme: 'exact',
                  network: 'stellar:testnet',
                  amount: '1',
                  asset: 'C',
                  payTo: 'G',
                  maxTimeoutSeconds: 60,
                  extra: {},
                } as never,
              )
              .catch(() => undefined);
            await facilitator
              .settle(
                { x402Version: 2, accepted: {}, payload: {} } as never,
                {
                  scheme: 'exact',
                  network: 'stellar:testnet',
                  amount: '1',
                  asset: 'C',
                  payTo: 'G',
                  maxTimeoutSeconds: 60,
                  extra: {},
                } as never,
              )
              .catch(() => undefined);
          } finally {
            globalThis.fetch = realFetch;
          }
          expect(seen.find((r) => r.url.endsWith('/x402/supported'))?.auth ?? null).toBeNull();
          expect(seen.find((r) => r.url.endsWith('/x402/settle'))?.auth).toBe('Bearer mk_readme_test_key');
          expect(seen.find((r) => r.url.endsWith('/x402/verify'))?.auth).toBe('Bearer mk_readme_test_key');
        } finally {
          delete process.env.MARKETPLACE_API_KEY;
        }
      },
    );

    it(
      'MCP: the clone form starts as written and serves the marketplace tools with the wallet; the published ' +
        'form names the same bin and settings',
      async () => {
        const configs = blocks
          .filter((b) => b.lang === 'json')
          .map(
            (b) =>
              JSON.parse(b.code) as {
                mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
              },
          );
        expect(configs).toHaveLength(2);
        const [clone, published] = configs.map((c) => c.mcpServers['paid-api-marketplace']);
        expect(published.command).toBe('npx');
        expect(published.args).toEqual(['-y', '-p', '@paid-api-marketplace/sdk-buyer', 'paid-api-marketplace-mcp']);
        expect(published.env).toEqual(clone.env);
        const bin = JSON.parse(fs.readFileSync(path.join(ROOT, 'sdk-buyer/package.json'), 'utf8')).bin[
          'paid-api-marketplace-mcp'
        ];
        expect(clone.args).toEqual([`/path/to/clone/sdk-buyer/${bin}`]);

        const wallet = Keypair.random();
        await m.network.faucet(wallet.publicKey(), 'USDC', '1');
        const transport = new StdioClientTransport({
          command: clone.command === 'node' ? process.execPath : clone.command,
          args: clone.args.map((a) => a.replace('/path/to/clone', ROOT)),
          env: {
            ...clone.env,
            PATH: process.env.PATH ?? '',
            MARKETPLACE_URL: m.baseUrl,
            MARKETPLACE_WALLET_SECRET: wallet.secret(),
          },
          stderr: 'pipe',
        });
        const client = new Client({ name: 'readme-test', version: '1.0.0' });
        await client.connect(transport);
        try {
          const tools = (await client.listTools()).tools.map((t) => t.name).sort();
          expect(tools).toEqual([
            'call_paid_resource',
            'get_budget',
            'get_receipt',
            'inspect_resource',
            'list_supported_networks',
            'search_resources',
          ]);
          const networks = await client.callTool({ name: 'list_supported_networks', arguments: {} });
          expect(networks.isError).toBeFalsy();
        } finally {
          await client.close();
        }
      },
    );
  });
});

/** The text of a README outside its code blocks (paths in blocks are examples, checked by the tests above). */
const prose = (text: string) => text.replace(/```\w*\n[\s\S]*?```/g, '');
const read = (doc: string) => fs.readFileSync(path.join(ROOT, doc), 'utf8');
/** Placeholders and generated or local-only places a README may name without them being in the repository. */
const notARepositoryPath = (p: string) => /\.\.\.|…|[*<>{}]/.test(p) || p.startsWith('.data/');
/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
const anchors = (text: string) =>
  new Set(
    prose(text)
      .split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) => slug(l.replace(/^#+ /, ''))),
  );

describe('README.md architecture map (issue #23)', () => {
  const mapStart = README.indexOf('\n## Architecture map');
  const map = README.slice(mapStart, README.indexOf('\n## ', mapStart + 1));
  const spec = JSON.parse(read('openapi/dist/openapi.json')) as {
    paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
  };
  const operations = Object.values(spec.paths).flatMap((item) =>
    Object.values(item).filter((o) => o && typeof o === 'object' && o.operationId),
  );
  /** The map's rows, each with the tag section it stands in (`### <tag>: ...`). */
  const rows: Array<{ tag: string; operationId: string; cells: string[] }> = [];
  let tag = '';
  for (const line of map.split('\n')) {
    const heading = /^### ([\w-]+):/.exec(line);
    if (heading) tag = heading[1];
    const row = /^\| `(\w+)` \|(.*)\|$/.exec(line);
    if (row) rows.push({ tag, operationId: row[1], cells: row[2].split(' | ').map((c) => c.trim()) });
  }

  it(
    'every operationId of openapi/dist/openapi.json has one row, under its tag, and no row names an operation ' +
      'the contract lacks',
    () => {
      expect(mapStart).toBeGreaterThan(0);
      expect(operations.length).toBe(47);
      const expected = operations.map((o) => `${o.tags![0].toLowerCase()} ${o.operationId}`).sort();
      expect(rows.map((r) => `${r.tag} ${r.operationId}`).sort()).toEqual(expected);
    },
  );

  it('every tag names its handler file, server/src/http/handlers/<tag>.ts', () => {
    const tags = [...new Set(operations.map((o) => o.tags![0].toLowerCase()))].sort();
    expect(tags).toEqual(['discovery', 'facilitator', 'mcp', 'operations', 'payments', 'resources', 'sellers', 'x402']);
    for (const t of tags)
      expect(map).toContain(`### ${t}: [\`server/src/http/handlers/${t}.ts\`](server/src/http/handlers/${t}.ts)`);
  });

  it('every repository path the READMEs name exists (map paths are under server/src/)', () => {
    const named: string[] = [];
    for (const doc of LINKED_DOCS) {
      for (const m of prose(read(doc)).matchAll(
        /(?<![\w./-])((?:openapi|server|local-network|sdk-buyer|sdk-seller|scripts|examples|test|docs|\.ci)\/[^\s`'"()[\],;:]*)/g,
      )) {
        named.push(m[1].split('#')[0].replace(/(?<!\.)\.$/, ''));
      }
    }
    for (const m of map.matchAll(/`((?:domain|data|ledger|net|jobs|http|areas|metrics|x402|mcp)\/[^`\s]*)`/g))
      named.push(`server/src/${m[1]}`);
    const missing = [...new Set(named)].filter((p) => !notARepositoryPath(p) && !fs.existsSync(path.join(ROOT, p)));
    expect(missing).toEqual([]);
  });

  it('every function the map names is in the file named before it in its cell (or is an operation of the map)', () => {
    const ids = new Set(rows.map((r) => r.operationId));
    const wrong: string[] = [];
    for (const r of rows) {
      for (const cell of r.cells.slice(1)) {
        let file: string | null = null;
        for (const [, token] of cell.matchAll(/`([^`]+)`/g)) {
          if (token.includes('/')) {
            const p = /^(openapi|server|sdk-buyer|sdk-seller|scripts)\//.test(token) ? token : `server/src/${token}`;
            file = p.endsWith('.ts') && fs.existsSync(path.join(ROOT, p)) ? p : null;
          } else if (/^[A-Za-z_$][\w$]*$/.test(token)) {
            const found = file ? new RegExp(`\\b${token}\\b`).test(read(file)) : ids.has(token);
            if (!found) wrong.push(`${r.operationId}: ${token}${file ? ` in ${file}` : ''}`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('every relative link of the READMEs reaches a file of the repository, and every anchor a heading', () => {
    const broken: string[] = [];
    for (const doc of LINKED_DOCS) {
      for (const [, target] of prose(read(doc)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split('#');
        const resolved = file ? path.join(path.dirname(doc), file) : doc;
        if (!fs.existsSync(path.join(ROOT, resolved))) broken.push(`${doc}: ${target}`);
        else if (anchor && resolved.endsWith('.md') && !anchors(read(resolved)).has(anchor))
          broken.push(`${doc}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('no README or markdown file points outside the repository', () => {
    const outside: string[] = [];
    const walk = (dir: string): string[] =>
      fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
        const rel = path.join(dir, e.name);
        if (e.isDirectory())
          return ['node_modules', '.git', '.data', 'dist', 'coverage'].includes(e.name) ? [] : walk(rel);
        return e.name.endsWith('.md') ? [rel] : [];
      });
    for (const doc of walk('.')) {
      const text = read(doc);
      for (const m of text.matchAll(
        /(?<![\w.-])(\.\.\/[^\s`'")\]]*|\/(?:work|home|tmp|root|usr|etc|var|opt|mnt|srv)\/[^\s`'")\]]*)/g,
      )) {
        const resolved = path.normalize(path.join(path.dirname(doc), m[1]));
        if (m[1].startsWith('/') || resolved.startsWith('..')) outside.push(`${doc}: ${m[1]}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
