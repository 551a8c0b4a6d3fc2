/**
 * Executes the "Charge for an MCP tool" section of README.md: its ```typescript block appears verbatim (modulo
 * indentation) below, served on a free port and paid by the buyer SDK's payAndCallTool against the real
 * marketplace and the local network. (The ```ts blocks of the other sections are test/readme.test.ts's.)
 */
import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { z } from 'zod';
import { Keypair } from '@stellar/stellar-sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createSellerClient, paidTool, statelessMcpHandler } from '../src';
import { createBuyerClient, payAndCallTool } from '../../sdk-buyer/src';
import { normalize } from '../../test/support/readme';
import { listen, startMarketplace, type Marketplace } from '../../test/support/marketplace';

describe('README examples: MCP', () => {
  let m: Marketplace;
  beforeAll(async () => {
    m = await startMarketplace();
  });
  afterAll(async () => {
    await m?.stop();
  });

  it('every typescript block of README.md is in this file', () => {
    const self = normalize(fs.readFileSync(__filename, 'utf8'));
    const text = fs.readFileSync(path.resolve(__dirname, '../README.md'), 'utf8');
    const blocks = [...text.matchAll(/```typescript\n([\s\S]*?)```/g)].map((x) => normalize(x[1]));
    expect(blocks.length).toBe(1);
    for (const block of blocks) expect(self).toContain(block);
  });

  it('Charge for an MCP tool: unpaid calls get the requirements, a paid call runs the tool and is settled', async () => {
    const wallet = Keypair.random();
    await m.network.fundAccount(wallet.publicKey());
    await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    const { seller: me, apiKey } = await signup.sellers.signUp({ displayName: 'Lisbon Weather', domain: 'mcp-readme.test', wallet });
    const seller = signup.withApiKey(apiKey);
    // As in the route example: the paid tool gets only a payments-scoped key, never the admin key.
    const paymentsKey = await seller.keys.create(me.id, { name: 'mcp tools', scope: 'payments' });
    const paywallClient = createSellerClient({ baseUrl: m.baseUrl, apiKey: paymentsKey.secret });
    const usdc = m.network.assets.find((a) => a.code === 'USDC')!;
    const tool = await seller.catalog.catalog({
      sellerId: me.id,
      resource: {
        type: 'mcp',
        name: 'Lisbon weather forecast tool',
        description: 'Hourly weather forecast for a city, an MCP tool paid per call',
        url: 'https://mcp-readme.test/mcp',
        routeTemplate: '/mcp',
        network: 'stellar:testnet',
        payTo: wallet.publicKey(),
        assetCode: 'USDC',
        assetIssuer: usdc.issuer,
        amount: '0.05',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
        outputSchema: { type: 'object' },
        extensions: { mcp: { toolName: 'forecast' } },
      },
    });

    function buildTools() {
      const tools = new McpServer({ name: 'lisbon-weather', version: '1.0.0' });
      paidTool(tools, 'forecast', { client: paywallClient, resourceId: tool.resourceId, description: 'Hourly forecast', inputSchema: { city: z.string() } }, async ({ city }, payment) => ({
        content: [{ type: 'text', text: `${city}: 21.5 C (paid by ${payment.payer})` }],
      }));
      return tools;
    }
    const mcpApp = express();
    mcpApp.use(express.json());
    mcpApp.all('/mcp', statelessMcpHandler(buildTools));

    const http = await listen(mcpApp);
    const client = new Client({ name: 'buyer', version: '1.0.0' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${http.port}/mcp`)));
      const unpaid = await client.callTool({ name: 'forecast', arguments: { city: 'Lisbon' } });
      expect(unpaid).toMatchObject({ isError: true, structuredContent: { x402Version: 2, accepts: [{ amount: '500000', payTo: wallet.publicKey() }] } });

      const payer = Keypair.random();
      await m.network.fundAccount(payer.publicKey());
      await m.network.faucet(payer.publicKey(), 'USDC', '1');
      const buyer = createBuyerClient({ baseUrl: m.baseUrl, payment: { signer: payer, budget: { perCall: '0.1' } } });
      const { result, paid, receipt } = await payAndCallTool(client, 'forecast', { city: 'Lisbon' }, { buyer });
      expect(paid).toBe(true);
      expect(result.content).toEqual([{ type: 'text', text: `Lisbon: 21.5 C (paid by ${payer.publicKey()})` }]);
      expect(await seller.receipts.get(receipt!.receiptId!)).toMatchObject({ resourceId: tool.resourceId, sellerId: me.id });
      expect(m.network.balance(payer.publicKey(), 'USDC')).toBe('0.95');
      // The tool's key settled that call, yet may not touch the catalog: 403 FORBIDDEN.
      expect(await paywallClient.resources.update(tool.resourceId, { amount: '0.0001' }).catch((e: unknown) => e)).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    } finally {
      await client.close();
      await http.close();
    }
  });
});
