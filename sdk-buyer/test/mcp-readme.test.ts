/**
 * Executes the MCP section of README.md: each ```typescript block appears verbatim (modulo indentation) below, run
 * against the real marketplace, the local network and a seller's MCP server with a paid tool. (The ```ts blocks of
 * the other sections are test/readme.test.ts's.)
 */
import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { z } from 'zod';
import { Keypair } from '@stellar/stellar-sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createBuyerClient, createMarketplaceMcpServer, payAndCallTool } from '../src';
import { createSellerClient, paidTool, statelessMcpHandler, type SellerClient } from '../../sdk-seller/src';
import { normalize } from '../../test/support/readme';
import { eventually, listen, startMarketplace, type Marketplace } from '../../test/support/marketplace';

function typescriptBlocks(readmePath: string): string[] {
  const text = fs.readFileSync(readmePath, 'utf8');
  return [...text.matchAll(/```typescript\n([\s\S]*?)```/g)].map((m) => normalize(m[1]));
}

describe('README examples: MCP', () => {
  let m: Marketplace;
  let baseUrl: string;
  let secret: string;
  let toolServerUrl: string;
  let resourceId = '';
  let toolClient: SellerClient;
  let stop: () => Promise<void>;
  const log = jest.spyOn(console, 'log').mockImplementation(() => undefined);

  beforeAll(async () => {
    m = await startMarketplace();
    baseUrl = m.baseUrl;
    const wallet = Keypair.random();
    await m.network.fundAccount(wallet.publicKey());
    await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
    const signup = createSellerClient({ baseUrl });
    const { seller: me, apiKey } = await signup.sellers.signUp({
      displayName: 'Readme Tools',
      domain: 'readme-tools.test',
      wallet,
    });
    const seller = signup.withApiKey(apiKey);
    // The seller's paid tool holds only a payments-scoped key (verify, settle, its own payments), never the admin key.
    const paymentsKey = await seller.keys.create(me.id, { name: 'mcp tools', scope: 'payments' });
    toolClient = createSellerClient({ baseUrl, apiKey: paymentsKey.secret });
    const app = express();
    app.use(express.json());
    app.all(
      '/mcp',
      statelessMcpHandler(() => {
        const server = new McpServer({ name: 'readme-tools', version: '1.0.0' });
        paidTool(
          server,
          'forecast',
          {
            client: toolClient,
            resourceId,
            inputSchema: { city: z.string() },
            outputSchema: { city: z.string(), temperatureC: z.number() },
          },
          async ({ city }) => ({
            content: [{ type: 'text', text: `${city}: 21.5 C` }],
            structuredContent: { city, temperatureC: 21.5 },
          }),
        );
        return server;
      }),
    );
    const http = await listen(app);
    stop = http.close;
    toolServerUrl = `http://127.0.0.1:${http.port}/mcp`;
    const usdc = m.network.assets.find((a) => a.code === 'USDC')!;
    const cataloged = await seller.catalog.catalog({
      sellerId: me.id,
      resource: {
        type: 'mcp',
        name: 'Readme weather forecast tool',
        description: 'Hourly weather forecast for a city, an MCP tool paid per call',
        url: `http://readme-tools.test:${http.port}/mcp`,
        routeTemplate: '/mcp',
        network: 'stellar:testnet',
        payTo: wallet.publicKey(),
        assetCode: 'USDC',
        assetIssuer: usdc.issuer,
        amount: '0.01',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
        outputSchema: { type: 'object', properties: { city: { type: 'string' }, temperatureC: { type: 'number' } } },
        extensions: { mcp: { toolName: 'forecast' } },
      },
    });
    resourceId = cataloged.resourceId;
    const key = Keypair.random();
    await m.network.fundAccount(key.publicKey());
    await m.network.faucet(key.publicKey(), 'USDC', '1');
    secret = key.secret();
    await eventually(
      async () =>
        (await createBuyerClient({ baseUrl }).discovery.search({ q: 'weather forecast', type: 'mcp' })).resources
          .length > 0,
    );
  });
  afterAll(async () => {
    log.mockRestore();
    await stop?.();
    await m?.stop();
  });

  it('every typescript block of README.md is in this file', () => {
    const self = normalize(fs.readFileSync(__filename, 'utf8'));
    const blocks = typescriptBlocks(path.resolve(__dirname, '../README.md'));
    expect(blocks.length).toBe(2);
    for (const block of blocks) expect(self).toContain(block);
  });

  it('MCP: pay for a paid tool, then search through the embedded marketplace server', async () => {
    const agent = createBuyerClient({
      baseUrl,
      payment: { signer: Keypair.fromSecret(secret), budget: { perCall: '0.5', total: '5' } },
    });
    const mcp = new Client({ name: 'my-agent', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(toolServerUrl)));
    const { result, paid, receipt } = await payAndCallTool(mcp, 'forecast', { city: 'Lisbon' }, { buyer: agent });
    console.log(result.structuredContent, paid, receipt?.receiptId);
    await mcp.close();

    expect(log).toHaveBeenLastCalledWith({ city: 'Lisbon', temperatureC: 21.5 }, true, expect.stringMatching(/^rcp_/));
    expect(agent.spent).toBe('0.0100000');
    // The seller's tool settled that call with its payments key, which may not write the catalog.
    expect(await toolClient.resources.update(resourceId, { amount: '0.0001' }).catch((e: unknown) => e)).toMatchObject({
      status: 403,
      code: 'FORBIDDEN',
    });

    const [forAgent, forServer] = InMemoryTransport.createLinkedPair();
    await createMarketplaceMcpServer({ marketplace: agent, payer: agent, perCallLimit: '0.5' }).connect(forServer);
    const tools = new Client({ name: 'my-agent', version: '1.0.0' });
    await tools.connect(forAgent);
    const found = await tools.callTool({ name: 'search_resources', arguments: { q: 'weather forecast', type: 'mcp' } });
    console.log(found.structuredContent);

    expect(log).toHaveBeenLastCalledWith(
      expect.objectContaining({ resources: [expect.objectContaining({ id: resourceId, type: 'mcp' })] }),
    );
    expect((await tools.listTools()).tools.map((t) => t.name)).toContain('call_paid_resource');
    await tools.close();
  });
});
