/**
 * End to end, for agents: a seller runs an MCP server with a paid tool (paidTool), signs up, catalogs it as an `mcp`
 * resource; an agent using the marketplace MCP server (the buyer SDK's, with a wallet and a budget) searches,
 * inspects and calls it through `call_paid_resource`. The tool's answer arrives, buyer and seller read the same
 * receipt, the ledger moved the price (local simulation). A failing paid tool is never settled; a call over budget
 * is refused before anything is signed.
 */
import { Keypair } from '@stellar/stellar-sdk';
import express from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  createBuyerClient,
  createMarketplaceMcpServer,
  payAndCallTool,
  BudgetExceededError,
} from '../../sdk-buyer/src';
import { createTextMetrics } from '../../sdk-buyer/src/mcp/metrics';
import { createSellerClient, paidTool, statelessMcpHandler, type SellerClient } from '../../sdk-seller/src';
import { eventually, listen, loopbackFetch, startMarketplace, type Marketplace } from '../support/marketplace';

interface McpSeller {
  seller: SellerClient;
  sellerId: string;
  wallet: Keypair;
  url: string;
  resources: { forecast: string; flaky: string };
  calls: string[];
  stop(): Promise<void>;
}

/** The seller: signs up through the seller SDK, serves two paid tools over Streamable HTTP and catalogs each. */
async function sellerWithPaidTools(m: Marketplace, domain: string): Promise<McpSeller> {
  const wallet = Keypair.random();
  await m.network.fundAccount(wallet.publicKey());
  await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const usdc = m.network.assets.find((a) => a.code === 'USDC')!;
  const signup = createSellerClient({ baseUrl: m.baseUrl });
  const { seller: me, apiKey } = await signup.sellers.signUp({ displayName: 'Harbour Tides', domain, wallet });
  const seller = signup.withApiKey(apiKey);

  const s: McpSeller = {
    seller,
    sellerId: me.id,
    wallet,
    url: '',
    resources: { forecast: '', flaky: '' },
    calls: [],
    stop: async () => undefined,
  };
  const build = () => {
    const server = new McpServer({ name: 'harbour-tides', version: '1.0.0' });
    paidTool(
      server,
      'tide_forecast',
      {
        client: seller,
        resourceId: s.resources.forecast,
        description: 'Tide heights for a harbour',
        inputSchema: { harbour: z.string().max(64) },
        outputSchema: { harbour: z.string(), highTide: z.string() },
      },
      async ({ harbour }) => {
        s.calls.push(`tide_forecast:${harbour}`);
        return {
          content: [{ type: 'text', text: `${harbour}: high tide 14:05` }],
          structuredContent: { harbour, highTide: '14:05' },
        };
      },
    );
    paidTool(
      server,
      'tide_flaky',
      { client: seller, resourceId: s.resources.flaky, description: 'A tide tool whose upstream is down' },
      async () => {
        s.calls.push('tide_flaky');
        return { isError: true, content: [{ type: 'text', text: 'tide gauge offline' }] };
      },
    );
    return server;
  };
  const app = express();
  app.use(express.json());
  app.all('/mcp', statelessMcpHandler(build));
  const http = await listen(app);
  s.stop = http.close;
  s.url = `http://${domain}:${http.port}/mcp`;

  const draft = (toolName: string, name: string, amount: string) => ({
    type: 'mcp' as const,
    name,
    description: 'Tide heights for Atlantic harbours, an MCP tool paid per call in USDC',
    url: s.url,
    routeTemplate: '/mcp',
    network: 'stellar:testnet' as const,
    payTo: wallet.publicKey(),
    assetCode: 'USDC',
    assetIssuer: usdc.issuer,
    amount,
    inputSchema: { type: 'object', properties: { harbour: { type: 'string' } } },
    outputSchema: { type: 'object', properties: { harbour: { type: 'string' }, highTide: { type: 'string' } } },
    extensions: { mcp: { toolName } },
  });
  s.resources.forecast = (
    await seller.catalog.catalog({ sellerId: me.id, resource: draft('tide_forecast', 'Harbour tide forecast', '0.2') })
  ).resourceId;
  s.resources.flaky = (
    await seller.catalog.catalog({ sellerId: me.id, resource: draft('tide_flaky', 'Harbour tide gauge', '0.2') })
  ).resourceId;
  return s;
}

describe('an agent finds, inspects and pays for a paid MCP tool through the marketplace MCP server', () => {
  let m: Marketplace;
  let tides: McpSeller;
  let buyerKey: Keypair;

  beforeAll(async () => {
    m = await startMarketplace();
    tides = await sellerWithPaidTools(m, 'harbour-tides.test');
    buyerKey = Keypair.random();
    await m.network.fundAccount(buyerKey.publicKey());
    await m.network.faucet(buyerKey.publicKey(), 'USDC', '10');
  });
  afterAll(async () => {
    await tides?.stop();
    await m?.stop();
  });

  async function agent(budget: { perCall?: string; total?: string }) {
    const buyer = createBuyerClient({
      baseUrl: m.baseUrl,
      fetch: loopbackFetch,
      payment: { signer: buyerKey, budget },
    });
    const metrics = createTextMetrics('e2e');
    // The test sellers listen on 127.0.0.1: an explicit allowance (off by default).
    const server = createMarketplaceMcpServer({
      marketplace: buyer,
      payer: buyer,
      perCallLimit: budget.perCall,
      fetch: loopbackFetch,
      metrics: metrics.sink,
      allowPrivateNetworks: true,
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(clientSide);
    const call = async (name: string, args: Record<string, unknown> = {}) =>
      (await client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema, {
        timeout: 60_000,
      })) as CallToolResult;
    return { buyer, client, call, metrics, close: () => client.close() };
  }

  it(
    'search -> inspect -> call_paid_resource: the tool answers, buyer and seller read the settled receipt, the ' +
      'ledger moved the price',
    async () => {
      const a = await agent({ perCall: '0.5', total: '1' });
      try {
        const found = await eventually(async () => {
          const r = await a.call('search_resources', { q: 'tide harbours', type: 'mcp' });
          return (r.structuredContent as { resources: Array<{ id: string }> }).resources.find(
            (x) => x.id === tides.resources.forecast,
          );
        });
        expect(found).toMatchObject({
          type: 'mcp',
          amount: expect.stringMatching(/^0\.2/),
          payTo: tides.wallet.publicKey(),
        });

        const inspected = await a.call('inspect_resource', { resourceId: tides.resources.forecast });
        expect(inspected.structuredContent).toMatchObject({
          type: 'mcp',
          extensions: { mcp: { toolName: 'tide_forecast' } },
          sellerTrust: { sellerId: tides.sellerId },
          paymentRequirements: { payTo: tides.wallet.publicKey() },
        });

        const buyerBefore = m.network.balance(buyerKey.publicKey(), 'USDC');
        const sellerBefore = m.network.balance(tides.wallet.publicKey(), 'USDC');
        const paid = await a.call('call_paid_resource', {
          resourceId: tides.resources.forecast,
          arguments: { harbour: 'Porto' },
        });
        expect(paid.isError).toBeFalsy();
        const out = paid.structuredContent as {
          paid: boolean;
          type: string;
          result: { structuredContent: unknown };
          settlement: { transactionHash: string; receiptId: string };
          spent: string;
        };
        expect(out).toMatchObject({
          paid: true,
          type: 'mcp',
          result: { structuredContent: { harbour: 'Porto', highTide: '14:05' } },
          spent: '0.2000000',
        });
        expect(out.settlement).toMatchObject({
          transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
          receiptId: expect.stringMatching(/^rcp_/),
          network: 'stellar:testnet',
          payer: buyerKey.publicKey(),
        });
        expect(tides.calls).toEqual(['tide_forecast:Porto']);

        const settled = await eventually(async () => {
          const r = await a.buyer.receipts.get(out.settlement.receiptId);
          return r.status === 'settled' ? r : null;
        });
        expect(settled).toMatchObject({
          transactionHash: out.settlement.transactionHash,
          resourceId: tides.resources.forecast,
          sellerId: tides.sellerId,
          amount: expect.stringMatching(/^0\.2/),
          evidence: 'local_simulation',
        });
        // The seller (authenticated) reads the same receipt, plus the service's signed receipt (JWS) the public read
        // leaves out.
        expect(await tides.seller.receipts.get(out.settlement.receiptId)).toMatchObject(settled);
        const viaTool = await a.call('get_receipt', { receiptId: out.settlement.receiptId });
        expect(viaTool.structuredContent).toEqual(settled);

        expect(buyerBefore).toBe('10');
        expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('9.8');
        expect(sellerBefore).toBe('0.0000001');
        expect(m.network.balance(tides.wallet.publicKey(), 'USDC')).toBe('0.2000001');
        expect(a.metrics.render()).toContain(
          'mcp_tool_calls_total{environment="e2e",tool="call_paid_resource",network="stellar:testnet",outcome="ok"} 1',
        );
      } finally {
        await a.close();
      }
    },
  );

  it(
    'a paid tool that fails is never settled: the agent gets UPSTREAM_ERROR, nothing moves, nothing is spent; ' +
      'the signature the seller holds stays committed',
    async () => {
      const a = await agent({ perCall: '0.5', total: '1' });
      try {
        const before = m.network.balance(buyerKey.publicKey(), 'USDC');
        const failed = await a.call('call_paid_resource', { resourceId: tides.resources.flaky, arguments: {} });
        expect(failed.isError).toBe(true);
        expect(failed.structuredContent).toMatchObject({ error: { code: 'UPSTREAM_ERROR', details: { paid: false } } });
        expect(tides.calls).toContain('tide_flaky');
        await new Promise((r) => setTimeout(r, 500));
        expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe(before);
        expect(a.buyer.budget.spent).toBe('0.0000000');
        // The seller could still settle the signed authorization until it expires: it counts until the ledger says no.
        expect(a.buyer.budget.committed).toBe('0.2000000');
      } finally {
        await a.close();
      }
    },
  );

  it(
    'over budget: call_paid_resource answers BUDGET_EXCEEDED and payAndCallTool throws BudgetExceededError, both ' +
      'before signing; the tool never runs',
    async () => {
      const a = await agent({ perCall: '0.1' });
      try {
        const before = m.network.balance(buyerKey.publicKey(), 'USDC');
        const callsBefore = tides.calls.length;
        const refused = await a.call('call_paid_resource', {
          resourceId: tides.resources.forecast,
          arguments: { harbour: 'Faro' },
        });
        expect(refused.structuredContent).toMatchObject({
          error: {
            code: 'BUDGET_EXCEEDED',
            details: { limit: 'perCall', requested: '0.2000000', remaining: '0.1000000' },
          },
        });
        // The agent cannot raise the configured per-call budget with maxAmount.
        const raised = await a.call('call_paid_resource', {
          resourceId: tides.resources.forecast,
          arguments: { harbour: 'Faro' },
          maxAmount: '1',
        });
        expect(raised.structuredContent).toMatchObject({
          error: { code: 'BUDGET_EXCEEDED', details: { limit: 'perCall', remaining: '0.1000000' } },
        });
        expect(a.metrics.render()).toContain(
          'mcp_budget_rejections_total{environment="e2e",network="stellar:testnet",limit="perCall"} 2',
        );

        // The same through payAndCallTool with the stock client connected straight to the seller's server.
        const direct = new Client({ name: 'direct', version: '1.0.0' });
        await direct.connect(new StreamableHTTPClientTransport(new URL(tides.url), { fetch: loopbackFetch }));
        try {
          const err = await payAndCallTool(direct, 'tide_forecast', { harbour: 'Faro' }, { buyer: a.buyer }).catch(
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(BudgetExceededError);
          expect(err).toMatchObject({ code: 'BUDGET_EXCEEDED', limit: 'perCall' });
        } finally {
          await direct.close();
        }
        expect(tides.calls.length).toBe(callsBefore);
        expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe(before);
        expect(a.buyer.spent).toBe('0.0000000');
      } finally {
        await a.close();
      }
    },
  );
});
