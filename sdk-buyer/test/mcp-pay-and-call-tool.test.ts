/**
 * payAndCallTool against x402 MCP servers that are not our seller SDK's paidTool: an older server answering a
 * JSON-RPC error 402 with the PaymentRequired in `error.data`, and one that sends the PaymentRequired only in
 * `content[0].text` wrapped as `{"x402/error": {code: 402, data}}`. Both charge through the real marketplace
 * facilitator (verify, settle) on the local network; the stock MCP client talks to them over the SDK's in-memory
 * transport.
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import type { Keypair } from '@stellar/stellar-sdk';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { createBuyerClient, PaymentFailedError } from '../src';
import { createSellerClient, settleOutcome, toFacilitatorPayload } from '../../sdk-seller/src';
import {
  facilitatorRequirements,
  paymentRequiredFor,
  requirementsSource,
  settlementResponse,
} from '../../sdk-seller/src/paywall/paywall';
import {
  fundedBuyer,
  sellerWithResource,
  startFacilitatorEnv,
  type FacilitatorEnv,
} from '../../server/test/facilitator/helpers';

type Style = 'jsonrpc-402' | 'text-wrapper';

describe('payAndCallTool with other x402 MCP servers', () => {
  let env: FacilitatorEnv;
  let api: HttpServer;
  let baseUrl: string;
  let buyerKey: Keypair;
  let payTo: string;
  let resourceId: string;
  let sellerClient: ReturnType<typeof createSellerClient>;
  const served: string[] = [];

  beforeAll(async () => {
    env = await startFacilitatorEnv({ ledgerCloseMs: 100 });
    api = await new Promise<HttpServer>((r) => {
      const s = env.svc.app.listen(0, '127.0.0.1', () => r(s));
    });
    baseUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    const { seller, resource } = await sellerWithResource(env, '0.25');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
    sellerClient = createSellerClient({ baseUrl, apiKey: seller.apiKey });
    buyerKey = await fundedBuyer(env, '10');
  });
  afterAll(async () => {
    api?.closeAllConnections();
    await new Promise((r) => api?.close(r));
    await env?.stop();
  });

  /** A hand-written x402 MCP server on the low-level SDK Server, charging through our facilitator. */
  async function connect(style: Style): Promise<Client> {
    const terms = requirementsSource({ client: sellerClient, resourceId });
    const server = new Server({ name: `other-${style}`, version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [{ name: 'quote', inputSchema: { type: 'object' } }],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
      const t = await terms();
      const pr = paymentRequiredFor(
        t,
        resourceId,
        { url: 'mcp://tool/quote', description: 'A quote', mimeType: 'application/json' },
        'Payment required',
      );
      const sent = request.params._meta?.['x402/payment'] as Record<string, unknown> | undefined;
      if (!sent) {
        if (style === 'jsonrpc-402') throw new McpError(402, 'Payment required', pr);
        return {
          isError: true,
          content: [
            {
              type: 'text',
              text: JSON.stringify({ 'x402/error': { code: 402, message: 'Payment required', data: pr } }),
            },
          ],
        };
      }
      const payload = toFacilitatorPayload(sent, t);
      const verified = await sellerClient.facilitator.verify({
        x402Version: 2,
        paymentPayload: payload,
        paymentRequirements: facilitatorRequirements(t),
        resourceId,
      });
      served.push(style);
      const settled = await settleOutcome(sellerClient, {
        paymentAttemptId: verified.paymentAttemptId,
        paymentPayload: payload,
        resourceId,
      });
      if (settled.kind !== 'settled') throw new Error(`not settled: ${settled.kind}`);
      return {
        content: [{ type: 'text', text: 'quote: 42' }],
        _meta: { 'x402/payment-response': await settlementResponse(settled, verified.payer) },
      };
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(a);
    return client;
  }

  it.each<Style>(['jsonrpc-402', 'text-wrapper'])(
    'pays a server that signals payment required as %s, and reads its settlement',
    async (style) => {
      const client = await connect(style);
      const buyer = createBuyerClient({
        baseUrl,
        payment: { signer: buyerKey, rpcUrl: env.network.rpcUrl, budget: { perCall: '0.5' } },
      });
      const before = env.network.balance(buyerKey.publicKey(), 'USDC');
      const out = await buyer.payAndCallTool(client, 'quote', {});
      expect(out.paid).toBe(true);
      expect(out.result.content).toEqual([{ type: 'text', text: 'quote: 42' }]);
      expect(out.receipt).toMatchObject({
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        receiptId: expect.stringMatching(/^rcp_/),
        payer: buyerKey.publicKey(),
      });
      expect(out.requirements).toMatchObject({ amount: '0.2500000', payTo });
      expect(buyer.spent).toBe('0.2500000');
      expect(served).toContain(style);
      expect(Number(before) - Number(env.network.balance(buyerKey.publicKey(), 'USDC'))).toBeCloseTo(0.25, 7);
      await client.close();
    },
  );

  it(
    'a payment the server refuses throws PaymentFailedError with its code; the signature it holds stays ' +
      'committed until the ledger proves it unusable',
    async () => {
      const server = new Server({ name: 'refuser', version: '1.0.0' }, { capabilities: { tools: {} } });
      const t = await requirementsSource({ client: sellerClient, resourceId })();
      server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
        const code = request.params._meta?.['x402/payment'] ? 'INSUFFICIENT_BALANCE' : 'PAYMENT_REQUIRED';
        const pr = paymentRequiredFor(
          t,
          resourceId,
          { url: 'mcp://tool/quote', description: '', mimeType: 'application/json' },
          code,
        );
        return { isError: true, structuredContent: pr, content: [{ type: 'text', text: JSON.stringify(pr) }] };
      });
      const [a, b] = InMemoryTransport.createLinkedPair();
      await server.connect(b);
      const client = new Client({ name: 'agent', version: '1.0.0' });
      await client.connect(a);
      const buyer = createBuyerClient({
        baseUrl,
        payment: { signer: buyerKey, rpcUrl: env.network.rpcUrl, budget: { total: '1' } },
      });
      const err = await buyer.payAndCallTool(client, 'quote', {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentFailedError);
      expect(err).toMatchObject({ code: 'INSUFFICIENT_BALANCE', status: 402 });
      expect(buyer.budget.committed).toBe('0.2500000');
      expect(buyer.budget.spent).toBe('0.0000000');
      await client.close();
    },
  );
});
