/**
 * paidTool() on a seller's MCP server served over Streamable HTTP (statelessMcpHandler), called by the stock MCP
 * Client, against the real marketplace (verify/settle) and the local network. Payloads are signed with the server's
 * facilitator test helpers (ours and the stock x402 transaction form) and sent in `_meta["x402/payment"]`.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { z } from 'zod';
import type { Keypair } from '@stellar/stellar-sdk';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  sleep,
  startFacilitatorEnv,
  type FacilitatorEnv,
} from '../../server/test/facilitator/helpers';
import { createSellerClient, paidTool, PAID_TOOL_INSTRUCTIONS, statelessMcpHandler } from '../src';

/** paymentCase with an expiry inside the facilitator's window (maxTimeoutSeconds / ledger seconds + 2) unless set. */
const paymentWithin = (
  e: FacilitatorEnv,
  ...rest: Parameters<typeof paymentCase> extends [unknown, ...infer R] ? R : never
) => {
  const [b, to, amount, o = {}] = rest;
  return paymentCase(e, b, to, amount, { ...o, sign: { expiration: e.network.latestLedger() + 30, ...o.sign } });
};

describe('paidTool: a paid tool of the seller MCP server (x402 MCP transport)', () => {
  let env: FacilitatorEnv;
  let api: Server;
  let shop: Server;
  let client: Client;
  let buyer: Keypair;
  let payTo: string;
  let resourceId: string;
  const calls: string[] = [];
  let slowExpiration = 0;

  const call = (name: string, args: Record<string, unknown>, payment?: unknown): Promise<CallToolResult> =>
    client.request(
      {
        method: 'tools/call',
        params: { name, arguments: args, ...(payment ? { _meta: { 'x402/payment': payment } } : {}) },
      },
      CallToolResultSchema,
    ) as Promise<CallToolResult>;

  beforeAll(async () => {
    env = await startFacilitatorEnv({ ledgerCloseMs: 100 });
    api = await new Promise<Server>((r) => {
      const s = env.svc.app.listen(0, '127.0.0.1', () => r(s));
    });
    const baseUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    const { seller, resource } = await sellerWithResource(env, '0.25');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
    buyer = await fundedBuyer(env, '10');
    const sellerClient = createSellerClient({ baseUrl, apiKey: seller.apiKey });

    const build = () => {
      const server = new McpServer({ name: 'weather', version: '1.0.0' });
      paidTool(
        server,
        'forecast',
        {
          client: sellerClient,
          resourceId,
          description: 'Hourly forecast',
          inputSchema: { city: z.string().max(64) },
          outputSchema: { city: z.string(), temperatureC: z.number() },
        },
        async ({ city }, payment) => {
          calls.push(`forecast:${city}:${payment.payer === buyer.publicKey()}`);
          if (city === 'bad-shape')
            return { content: [{ type: 'text', text: 'no temperature' }], structuredContent: { city } };
          return {
            content: [{ type: 'text', text: `${city}: 21.5 C` }],
            structuredContent: { city, temperatureC: 21.5 },
          };
        },
      );
      paidTool(server, 'broken', { client: sellerClient, resourceId }, async () => {
        calls.push('broken');
        return { isError: true, content: [{ type: 'text', text: 'upstream weather service down' }] };
      });
      paidTool(server, 'throws', { client: sellerClient, resourceId }, async () => {
        calls.push('throws');
        throw new Error('boom');
      });
      paidTool(server, 'slow', { client: sellerClient, resourceId }, async () => {
        calls.push('slow');
        // Runs until the ledger is past the payment's expiration, so settlement finds it expired (whatever the load).
        for (let i = 0; i < 600 && env.network.latestLedger() <= slowExpiration; i++) await sleep(50);
        return { content: [{ type: 'text', text: 'paid content' }] };
      });
      return server;
    };
    const app = express();
    app.use(express.json());
    app.all('/mcp', statelessMcpHandler(build));
    shop = await new Promise<Server>((r) => {
      const s = app.listen(0, '127.0.0.1', () => r(s));
    });
    client = new Client({ name: 'test-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(shop.address() as AddressInfo).port}/mcp`)),
    );
  });
  afterAll(async () => {
    await client?.close();
    for (const s of [shop, api]) {
      s?.closeAllConnections();
      await new Promise((r) => s?.close(r));
    }
    await env?.stop();
  });
  beforeEach(() => (calls.length = 0));

  it(
    'without payment the tool answers isError with the x402 PaymentRequired (structuredContent and ' +
      'content[0].text); the handler does not run',
    async () => {
      const listed = await client.listTools();
      expect(listed.tools.map((t) => t.name).sort()).toEqual(['broken', 'forecast', 'slow', 'throws']);
      const result = await call('forecast', { city: 'Lisbon' });
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({
        x402Version: 2,
        error: 'PAYMENT_REQUIRED',
        resource: { url: 'mcp://tool/forecast', description: 'Hourly forecast' },
        accepts: [
          {
            scheme: 'exact',
            network: 'stellar:testnet',
            amount: '2500000',
            asset: env.usdc.contractId,
            payTo,
            extra: { asset: { code: 'USDC', issuer: env.usdc.issuer }, resourceId },
          },
        ],
      });
      expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent);
      expect(calls).toEqual([]);
    },
  );

  it(
    'a stock client (Client.callTool, which checks structuredContent against the advertised outputSchema even on ' +
      'errors) reads the PaymentRequired of the first call instead of a schema error; the server tells how to pay ' +
      'in its instructions',
    async () => {
      expect(client.getInstructions()).toBe(PAID_TOOL_INSTRUCTIONS);
      expect(client.getInstructions()).toContain('params._meta["x402/payment"]');
      const forecast = (await client.listTools()).tools.find((t) => t.name === 'forecast')!;
      expect(forecast.outputSchema).toMatchObject({
        type: 'object',
        properties: { city: { type: 'string' }, temperatureC: { type: 'number' } },
      });
      const first = await client.callTool({ name: 'forecast', arguments: { city: 'Braga' } });
      expect(first.isError).toBe(true);
      expect(first.structuredContent).toMatchObject({
        x402Version: 2,
        error: 'PAYMENT_REQUIRED',
        accepts: [expect.objectContaining({ scheme: 'exact', payTo })],
      });
      expect(calls).toEqual([]);
    },
  );

  it(
    'a paid answer that breaks the declared outputSchema is still refused and not charged, although the ' +
      'advertised schema admits the PaymentRequired',
    async () => {
      const before = env.network.balance(buyer.publicKey(), 'USDC');
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const result = await call('forecast', { city: 'bad-shape' }, c.payload);
      expect(result.isError).toBe(true);
      expect((result.content[0] as { text: string }).text).toContain('breaks its output schema: not charged');
      await sleep(300);
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe(before);
    },
  );

  it(
    'a valid payment in _meta is verified, the tool runs, the payment is settled and the settlement is in ' +
      '_meta["x402/payment-response"]',
    async () => {
      const before = env.network.balance(buyer.publicKey(), 'USDC');
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const result = await call('forecast', { city: 'Porto' }, c.payload);
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ city: 'Porto', temperatureC: 21.5 });
      expect(result._meta?.['x402/payment-response']).toMatchObject({
        success: true,
        transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
        receiptId: expect.stringMatching(/^rcp_/),
        network: 'stellar:testnet',
        payer: buyer.publicKey(),
      });
      expect(calls).toEqual(['forecast:Porto:true']);
      expect(Number(before) - Number(env.network.balance(buyer.publicKey(), 'USDC'))).toBeCloseTo(0.25, 7);
    },
  );

  it(
    'a replayed _meta payment is refused: the second call gets ' + 'isError and is not served or charged again',
    async () => {
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const first = await call('forecast', { city: 'Faro' }, c.payload);
      expect(first._meta?.['x402/payment-response']).toMatchObject({ success: true });
      const afterFirst = env.network.balance(buyer.publicKey(), 'USDC');
      const second = await call('forecast', { city: 'Faro' }, c.payload);
      expect(second.isError).toBe(true);
      expect(second._meta?.['x402/payment-response']).toBeUndefined();
      expect(second.structuredContent).toMatchObject({ x402Version: 2, error: expect.stringMatching(/^[A-Z_]+$/) });
      expect(second.structuredContent?.error).not.toBe('PAYMENT_REQUIRED');
      expect(JSON.stringify(second)).not.toContain('21.5');
      await sleep(300);
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe(afterFirst);
    },
  );

  it('a payment signed by someone else fails verify before the tool runs, with the facilitator code', async () => {
    const other = await fundedBuyer(env, '1');
    const c = await paymentWithin(env, buyer, payTo, '0.25', { sign: { signer: other } });
    const result = await call('forecast', { city: 'Braga' }, c.payload);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({
      error: 'INVALID_SIGNATURE',
      accepts: [expect.objectContaining({ payTo })],
    });
    expect(calls).toEqual([]);
  });

  it('a paid tool that fails (isError, or a throw) is never settled: its error goes out unpaid', async () => {
    const before = env.network.balance(buyer.publicKey(), 'USDC');
    const broken = await call('broken', {}, (await paymentWithin(env, buyer, payTo, '0.25')).payload);
    expect(broken).toMatchObject({ isError: true, content: [{ type: 'text', text: 'upstream weather service down' }] });
    expect(broken._meta?.['x402/payment-response']).toBeUndefined();
    const thrown = await call('throws', {}, (await paymentWithin(env, buyer, payTo, '0.25')).payload);
    expect(thrown).toMatchObject({ isError: true, content: [{ type: 'text', text: 'boom' }] });
    expect(calls).toEqual(['broken', 'throws']);
    await sleep(300);
    expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe(before);
  });

  it('the stock x402 payload ({ accepted, payload: { transaction } }) in _meta is translated and settled', async () => {
    const c = await paymentWithin(env, buyer, payTo, '0.25', { format: 'transaction' });
    const x402 = {
      x402Version: 2,
      accepted: { scheme: 'exact', network: 'stellar:testnet', amount: '2500000', asset: env.usdc.contractId, payTo },
      payload: { transaction: c.payload.authorization.xdr },
    };
    const result = await call('forecast', { city: 'Evora' }, x402);
    expect(result._meta?.['x402/payment-response']).toMatchObject({ success: true, payer: buyer.publicKey() });
  });

  it(
    'when settlement fails after the tool ran, its answer is dropped and the caller gets the failure in ' +
      'x402/payment-response',
    async () => {
      slowExpiration = env.network.latestLedger() + 20;
      const c = await paymentWithin(env, buyer, payTo, '0.25', { sign: { expiration: slowExpiration } });
      const result = await call('slow', {}, c.payload);
      expect(calls).toEqual(['slow']);
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result)).not.toContain('paid content');
      expect(result.structuredContent).toMatchObject({
        error: 'AUTH_EXPIRED',
        'x402/payment-response': { success: false, errorReason: 'AUTH_EXPIRED' },
      });
    },
  );
});
