/**
 * Issue 32, the agent route, as a newcomer runs it: `LOCAL_DEV_DOMAINS=true npm start` (the real main.ts), a seller
 * on a `*.test` domain serving a paywalled route with the seller SDK, and agents that pay it with THEIR OWN wallet:
 * - a stock MCP client (@modelcontextprotocol/sdk Client) on the marketplace's remote MCP server (/mcp): the first
 *   call_paid_resource answers the seller's PaymentRequired (what the agent needs, without a wrapper); the buyer
 *   SDK's payAndCallTool (the x402 MCP payment wrapper) signs and calls again; the service forwards the payment to
 *   the seller, which settles through the service; the service never sees the buyer's key; the same for a seller's
 *   paid MCP tool (type "mcp", the seller SDK's paidTool): the payment travels in the forwarded tool call's _meta;
 * - the stdio bin (`paid-api-marketplace-mcp`) with LOCAL_DEV_DOMAINS=true reaches and pays the local seller, and
 *   tells its remaining budget; without the switch it refuses the `*.test` seller naming the switch.
 * Everything settles on the local network: local simulation.
 */
import path from 'node:path';
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createSellerClient, paidTool, paywall, statelessMcpHandler } from '../../sdk-seller/src';
import { createBuyerClient } from '../../sdk-buyer/src';
import { freePort } from '../../server/test/support/free-port';
import { listen } from '../support/marketplace';
import { callPaidResource } from '../../examples/agent/x402-mcp-wrapper';
import { startMain, type StartedMain } from '../support/main-process';

const ROOT = path.resolve(__dirname, '../..');

async function fund(localNetworkUrl: string, address: string, usdc: string) {
  const bot = await fetch(`${localNetworkUrl}/friendbot?addr=${address}`);
  if (!bot.ok) throw new Error(`friendbot: ${bot.status}`);
  const faucet = await fetch(`${localNetworkUrl}/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address, asset: 'USDC', amount: usdc }),
  });
  if (!faucet.ok) throw new Error(`faucet: ${faucet.status} ${await faucet.text()}`);
}

describe('the agent route: any MCP client pays a local seller with its own wallet', () => {
  let main: StartedMain;
  let resourceId: string;
  let sellerWallet: Keypair;
  let served = 0;
  let closeShop: () => Promise<void>;
  let closeTides: () => Promise<void>;
  let toolResourceId: string;
  let tidesWallet: Keypair;
  const toolCalls: string[] = [];

  beforeAll(async () => {
    main = await startMain({ LOCAL_DEV_DOMAINS: 'true', LOCAL_DEV_DOMAINS_PORT: String(await freePort()) });
    sellerWallet = Keypair.random();
    await fund(main.localNetworkUrl, sellerWallet.publicKey(), '0.0000001');
    const signup = createSellerClient({ baseUrl: main.baseUrl });
    const { seller: me, apiKey } = await signup.sellers.signUp({
      displayName: 'Agent Weather',
      domain: 'agent-weather.test',
      wallet: sellerWallet,
    });
    const admin = signup.withApiKey(apiKey);
    const paymentsKey = await admin.keys.create(me.id, { name: 'paywall', scope: 'payments' });
    const state = { resourceId: '' };
    const app = express();
    app.get(
      '/v1/forecast/:city',
      (req, res, next) =>
        paywall({
          client: createSellerClient({ baseUrl: main.baseUrl, apiKey: paymentsKey.secret }),
          resourceId: state.resourceId,
        })(req, res, next),
      (req, res) => {
        served += 1;
        res.json({ city: req.params.city, temperatureC: 19 });
      },
    );
    const shop = await listen(app);
    closeShop = shop.close;
    const usdcIssuer = (await (await fetch(`${main.baseUrl}/v1/networks`)).json()).items[0].assets[0].issuer as string;
    const cataloged = await admin.catalog.catalog({
      sellerId: me.id,
      resource: {
        type: 'http',
        name: 'Agent weather forecast',
        description: 'Hourly forecast for a city, paid per call in USDC',
        url: `http://agent-weather.test:${shop.port}/v1/forecast/{city}`,
        routeTemplate: '/v1/forecast/{city}',
        network: 'stellar:testnet',
        payTo: sellerWallet.publicKey(),
        assetCode: 'USDC',
        assetIssuer: usdcIssuer,
        amount: '0.02',
        inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
        outputSchema: { type: 'object' },
      },
    });
    state.resourceId = resourceId = cataloged.resourceId;

    // A second seller, of a paid MCP tool (type "mcp"): its own MCP server on a *.test domain, the seller SDK's
    // paidTool and statelessMcpHandler, holding only a payments key.
    tidesWallet = Keypair.random();
    await fund(main.localNetworkUrl, tidesWallet.publicKey(), '0.0000001');
    const tidesSignup = await signup.sellers.signUp({
      displayName: 'Agent Tides',
      domain: 'agent-tides.test',
      wallet: tidesWallet,
    });
    const tidesAdmin = signup.withApiKey(tidesSignup.apiKey);
    const tidesKey = await tidesAdmin.keys.create(tidesSignup.seller.id, { name: 'paid tool', scope: 'payments' });
    const tidesClient = createSellerClient({ baseUrl: main.baseUrl, apiKey: tidesKey.secret });
    const tool = { resourceId: '' };
    const build = () => {
      const server = new McpServer({ name: 'agent-tides', version: '1.0.0' });
      paidTool(
        server,
        'tide_forecast',
        {
          client: tidesClient,
          resourceId: tool.resourceId,
          description: 'Tide heights for a harbour',
          inputSchema: { harbour: z.string().max(64) },
          outputSchema: { harbour: z.string(), highTide: z.string() },
        },
        async ({ harbour }) => {
          toolCalls.push(harbour);
          return {
            content: [{ type: 'text', text: `${harbour}: high tide 14:05` }],
            structuredContent: { harbour, highTide: '14:05' },
          };
        },
      );
      return server;
    };
    const tidesApp = express();
    tidesApp.use(express.json());
    tidesApp.all('/mcp', statelessMcpHandler(build));
    const tides = await listen(tidesApp);
    closeTides = tides.close;
    const toolCataloged = await tidesAdmin.catalog.catalog({
      sellerId: tidesSignup.seller.id,
      resource: {
        type: 'mcp',
        name: 'Agent tide forecast',
        description: 'Tide heights for a harbour, an MCP tool paid per call in USDC',
        url: `http://agent-tides.test:${tides.port}/mcp`,
        routeTemplate: '/mcp',
        network: 'stellar:testnet',
        payTo: tidesWallet.publicKey(),
        assetCode: 'USDC',
        assetIssuer: usdcIssuer,
        amount: '0.03',
        inputSchema: { type: 'object', properties: { harbour: { type: 'string' } } },
        outputSchema: { type: 'object', properties: { harbour: { type: 'string' }, highTide: { type: 'string' } } },
        extensions: { mcp: { toolName: 'tide_forecast' } },
      },
    });
    tool.resourceId = toolResourceId = toolCataloged.resourceId;
  }, 240_000);
  afterAll(async () => {
    await closeTides?.();
    await closeShop?.();
    await main?.stop();
  });

  async function remoteAgent(): Promise<Client> {
    const client = new Client({ name: 'stock-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${main.baseUrl}/mcp`)));
    return client;
  }

  it(
    "remote /mcp without a payment wrapper: call_paid_resource answers the seller's PaymentRequired, exactly " +
      'what the agent must sign',
    async () => {
      const client = await remoteAgent();
      try {
        expect(client.getInstructions()).toContain('x402/payment');
        const tool = (await client.listTools()).tools.find((t) => t.name === 'call_paid_resource');
        expect(tool?.outputSchema?.type).toBe('object');
        const first = await client.callTool({
          name: 'call_paid_resource',
          arguments: { resourceId, pathParams: { city: 'Porto' } },
        });
        expect(first.isError).toBe(true);
        expect(first.structuredContent).toMatchObject({
          x402Version: 2,
          resourceId,
          accepts: [
            expect.objectContaining({
              scheme: 'exact',
              network: 'stellar:testnet',
              payTo: sellerWallet.publicKey(),
              amount: '200000',
            }),
          ],
        });
        expect(served).toBe(0);
      } finally {
        await client.close();
      }
    },
  );

  it(
    "remote /mcp with the x402 MCP wrapper (payAndCallTool): the agent's own wallet pays, the seller settles " +
      'through the service, the answer carries the settlement',
    async () => {
      const agentWallet = Keypair.random();
      await fund(main.localNetworkUrl, agentWallet.publicKey(), '1');
      const buyer = createBuyerClient({
        baseUrl: main.baseUrl,
        payment: { signer: agentWallet, budget: { perCall: '0.05', total: '1' } },
      });
      const client = await remoteAgent();
      try {
        const paid = await buyer.payAndCallTool(
          client,
          'call_paid_resource',
          { resourceId, pathParams: { city: 'Porto' } },
          { maxAmount: '0.05' },
        );
        expect(paid.paid).toBe(true);
        expect(paid.receipt).toMatchObject({
          transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
          receiptId: expect.stringMatching(/^rcp_/),
        });
        expect(paid.result.structuredContent).toMatchObject({
          paid: true,
          result: { status: 200, body: { city: 'Porto', temperatureC: 19 } },
        });
        expect(served).toBe(1);
        const receipt = await buyer.receipts.get(paid.receipt!.receiptId as string);
        expect(receipt).toMatchObject({
          status: 'settled',
          resourceId,
          amount: expect.stringMatching(/^0\.02/),
          evidence: 'local_simulation',
        });
        // the payment came from the agent's own wallet, checked on the ledger
        expect(
          await buyer.receipts.verifyOnLedger(receipt, {
            payer: agentWallet.publicKey(),
            payTo: sellerWallet.publicKey(),
          }),
        ).toMatchObject({ ok: true });
        expect(paid.payment).not.toBeNull();
        expect(buyer.budget.spent).toBe('0.0200000');
        // the service never held the buyer's key
        expect(main.logs()).not.toContain(agentWallet.secret());
      } finally {
        await client.close();
      }
    },
    120_000,
  );

  it(
    'remote /mcp with the 30-line wrapper of the docs (examples/agent/x402-mcp-wrapper.ts): a stock client pays ' +
      "the http seller and the paid MCP tool with the agent's own wallet, signing the cataloged terms",
    async () => {
      const agentWallet = Keypair.random();
      await fund(main.localNetworkUrl, agentWallet.publicKey(), '1');
      const wallet = createBuyerClient({ baseUrl: main.baseUrl, payment: { signer: agentWallet } });
      const client = await remoteAgent();
      const servedBefore = served;
      try {
        const http = await callPaidResource(client, wallet, { resourceId, pathParams: { city: 'Aveiro' } }, '0.05');
        expect(http.isError).toBeFalsy();
        expect(http.structuredContent).toMatchObject({
          paid: true,
          result: { status: 200, body: { city: 'Aveiro', temperatureC: 19 } },
        });
        expect(http._meta?.['x402/payment-response']).toMatchObject({
          transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
        });
        expect(served).toBe(servedBefore + 1);
        const tool = await callPaidResource(
          client,
          wallet,
          { resourceId: toolResourceId, arguments: { harbour: 'Sines' } },
          '0.05',
        );
        expect(tool.structuredContent).toMatchObject({
          type: 'mcp',
          paid: true,
          result: { structuredContent: { harbour: 'Sines', highTide: '14:05' } },
        });
        // above the agent's own limit nothing is signed and the seller does not serve
        await expect(
          callPaidResource(client, wallet, { resourceId, pathParams: { city: 'Tavira' } }, '0.01'),
        ).rejects.toThrow(/more than 0\.01: not signed/);
        expect(served).toBe(servedBefore + 1);
      } finally {
        await client.close();
      }
    },
    120_000,
  );

  it(
    "remote /mcp, a seller's paid MCP tool (type mcp): a stock client reads the tool's PaymentRequired, then the " +
      "x402 MCP wrapper pays it with the agent's own wallet; the tool's answer and the settlement come back",
    async () => {
      const agentWallet = Keypair.random();
      await fund(main.localNetworkUrl, agentWallet.publicKey(), '1');
      const client = await remoteAgent();
      const called = () => toolCalls.slice(before);
      const before = toolCalls.length;
      try {
        // without a wrapper: the seller tool's own PaymentRequired, forwarded, with the resource id
        const first = await client.callTool({
          name: 'call_paid_resource',
          arguments: { resourceId: toolResourceId, arguments: { harbour: 'Leixoes' } },
        });
        expect(first.isError).toBe(true);
        expect(first.structuredContent).toMatchObject({
          x402Version: 2,
          resourceId: toolResourceId,
          error: 'PAYMENT_REQUIRED',
          accepts: [
            expect.objectContaining({
              scheme: 'exact',
              network: 'stellar:testnet',
              payTo: tidesWallet.publicKey(),
              amount: '300000',
            }),
          ],
        });
        expect(called()).toEqual([]);

        // with the wrapper: the agent's own wallet signs, the service forwards the payment in the tool call's _meta
        const buyer = createBuyerClient({
          baseUrl: main.baseUrl,
          payment: { signer: agentWallet, budget: { perCall: '0.05', total: '1' } },
        });
        const paid = await buyer.payAndCallTool(
          client,
          'call_paid_resource',
          { resourceId: toolResourceId, arguments: { harbour: 'Leixoes' } },
          { maxAmount: '0.05' },
        );
        expect(paid.paid).toBe(true);
        expect(paid.result.structuredContent).toMatchObject({
          resourceId: toolResourceId,
          type: 'mcp',
          paid: true,
          result: { structuredContent: { harbour: 'Leixoes', highTide: '14:05' } },
        });
        expect(paid.result._meta?.['x402/payment-response']).toMatchObject({
          success: true,
          transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
          receiptId: expect.stringMatching(/^rcp_/),
        });
        expect(called()).toEqual(['Leixoes']);
        const receipt = await buyer.receipts.get(paid.receipt!.receiptId as string);
        expect(receipt).toMatchObject({
          status: 'settled',
          resourceId: toolResourceId,
          amount: expect.stringMatching(/^0\.03/),
          evidence: 'local_simulation',
        });
        expect(
          await buyer.receipts.verifyOnLedger(receipt, {
            payer: agentWallet.publicKey(),
            payTo: tidesWallet.publicKey(),
          }),
        ).toMatchObject({ ok: true });
        expect(buyer.budget.spent).toBe('0.0300000');
        expect(main.logs()).not.toContain(agentWallet.secret());

        // the budget is the agent's own: over its per-call limit its wrapper refuses before signing, the tool does not
        // run
        await expect(
          buyer.payAndCallTool(
            client,
            'call_paid_resource',
            { resourceId: toolResourceId, arguments: { harbour: 'Leixoes' } },
            { maxAmount: '0.01' },
          ),
        ).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
        expect(called()).toEqual(['Leixoes']);
      } finally {
        await client.close();
      }
    },
    120_000,
  );

  async function stdioAgent(env: Record<string, string>): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(ROOT, 'sdk-buyer/dist/cjs/bin/marketplace-mcp.js')],
      env: { PATH: process.env.PATH ?? '', MARKETPLACE_URL: main.baseUrl, ...env },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-agent', version: '1.0.0' });
    await client.connect(transport);
    return client;
  }

  it('the stdio bin with LOCAL_DEV_DOMAINS=true pays the *.test seller and tells the remaining budget', async () => {
    const wallet = Keypair.random();
    await fund(main.localNetworkUrl, wallet.publicKey(), '1');
    const client = await stdioAgent({
      MARKETPLACE_WALLET_SECRET: wallet.secret(),
      LOCAL_DEV_DOMAINS: 'true',
      MARKETPLACE_BUDGET_PER_CALL: '0.05',
      MARKETPLACE_BUDGET_TOTAL: '0.5',
    });
    try {
      const call = await client.callTool({
        name: 'call_paid_resource',
        arguments: { resourceId, pathParams: { city: 'Faro' } },
      });
      expect(call.isError).toBeFalsy();
      expect(call.structuredContent).toMatchObject({
        paid: true,
        amount: '0.0200000',
        result: { status: 200, body: { city: 'Faro' } },
      });
      const budget = await client.callTool({ name: 'get_budget', arguments: {} });
      expect(budget.structuredContent).toMatchObject({ perCall: '0.0500000', total: '0.5000000', heldBy: 'server' });
      const b = budget.structuredContent as { committed: string; spent: string; remaining: string };
      expect(Number(b.committed) + Number(b.spent)).toBeCloseTo(0.02, 7);
      expect(b.remaining).toBe('0.4800000');
    } finally {
      await client.close();
    }
  }, 120_000);

  it(
    'the stdio bin without LOCAL_DEV_DOMAINS refuses the *.test seller with a message naming the switch, before ' +
      'paying',
    async () => {
      const wallet = Keypair.random();
      await fund(main.localNetworkUrl, wallet.publicKey(), '1');
      const client = await stdioAgent({ MARKETPLACE_WALLET_SECRET: wallet.secret() });
      const before = served;
      try {
        const call = await client.callTool({
          name: 'call_paid_resource',
          arguments: { resourceId, pathParams: { city: 'Braga' } },
        });
        expect(call.isError).toBe(true);
        expect(call.structuredContent).toMatchObject({
          error: { code: 'ADDRESS_NOT_ALLOWED', message: expect.stringContaining('LOCAL_DEV_DOMAINS=true') },
        });
        expect(served).toBe(before);
      } finally {
        await client.close();
      }
    },
    60_000,
  );
});
