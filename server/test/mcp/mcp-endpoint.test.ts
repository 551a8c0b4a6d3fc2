/**
 * The service's /mcp (Streamable HTTP, stateless) driven by the stock MCP Client of the official SDK over real
 * HTTP, against the real service and PostgreSQL: the read-only tools, a resource cataloged just before found and
 * inspected, coded tool errors, the transport's refusals in the error envelope, and the MCP metrics on /metrics.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { catalog, draft, waitIndexed } from '../discovery/helpers';

let svc: TestService;
let server: Server;
let baseUrl: string;
let seller: SignedUpSeller;
let client: Client;

const call = async (name: string, args: Record<string, unknown> = {}) =>
  (await client.request(
    { method: 'tools/call', params: { name, arguments: args } },
    CallToolResultSchema,
  )) as CallToolResult;

beforeAll(async () => {
  svc = await startTestService({ runJobs: true, jobPollMs: 100 });
  server = await new Promise<Server>((r) => {
    const s = svc.app.listen(0, '127.0.0.1', () => r(s));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  seller = await signUpSeller(svc.app);
  client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`)));
});
afterAll(async () => {
  await client?.close();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await svc?.stop();
});

describe('the marketplace MCP server at /mcp', () => {
  it(
    "lists the four read-only tools, call_paid_resource (paid by the agent's own wallet, x402 MCP) and " +
      'get_budget, each with input and output schemas, and gives instructions',
    async () => {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'call_paid_resource',
        'get_budget',
        'get_receipt',
        'inspect_resource',
        'list_supported_networks',
        'search_resources',
      ]);
      for (const t of tools) expect(t.inputSchema.type).toBe('object');
      for (const t of tools) expect(t.outputSchema?.type).toBe('object');
      expect(client.getInstructions()).toMatch(/x402\/payment/);
      expect(client.getInstructions()).toMatch(/never holds your key/);
      expect(tools.find((t) => t.name === 'search_resources')!.inputSchema.properties).toEqual(
        expect.objectContaining({
          q: expect.any(Object),
          network: expect.objectContaining({ enum: ['stellar:testnet', 'stellar:pubnet'] }),
          maxPrice: expect.any(Object),
          limit: expect.any(Object),
        }),
      );
    },
  );

  it(
    "get_budget says the budget lives in the agent's own client: this server holds no wallet and no budget " +
      '(null limits, heldBy "client")',
    async () => {
      const budget = await client.callTool({ name: 'get_budget', arguments: {} });
      expect(budget.isError).toBeFalsy();
      expect(budget.structuredContent).toEqual({
        perCall: null,
        total: null,
        remaining: null,
        heldBy: 'client',
        message: expect.stringContaining('holds no wallet and no budget'),
      });
      expect((budget.structuredContent as { message: string }).message).toContain('payAndCallTool');
      expect(client.getInstructions()).toContain('holds no budget');
    },
  );

  it('a resource cataloged just before is found by search_resources and read by inspect_resource', async () => {
    const name = 'Tide tables for Atlantic harbours';
    const cataloged = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resource: draft(seller, {
        name,
        description: 'Hourly tide heights for Atlantic harbours, paid per call in USDC',
        amount: '0.02',
      }),
    });
    expect(cataloged.status).toBe(201);
    const resourceId = cataloged.body.resourceId as string;
    await waitIndexed(svc.db);

    const found = await call('search_resources', { q: 'tide harbours', network: 'stellar:testnet', limit: 5 });
    expect(found.isError).toBeFalsy();
    const page = found.structuredContent as {
      resources: Array<{ id: string; amount: string; type: string }>;
      partialResults: boolean;
    };
    expect(page.resources.map((r) => r.id)).toContain(resourceId);
    expect(JSON.parse((found.content[0] as { text: string }).text)).toEqual(found.structuredContent);

    const listed = await call('search_resources', { type: 'http', sellerId: seller.id });
    expect((listed.structuredContent as { resources: Array<{ id: string }> }).resources.map((r) => r.id)).toContain(
      resourceId,
    );

    const inspected = await call('inspect_resource', { resourceId });
    expect(inspected.isError).toBeFalsy();
    expect(inspected.structuredContent).toMatchObject({
      id: resourceId,
      name,
      paymentRequirements: {
        network: 'stellar:testnet',
        amount: expect.stringMatching(/^0\.02/),
        payTo: seller.wallet.publicKey(),
        asset: { code: 'USDC' },
      },
      inputSchema: { type: 'object' },
      sellerTrust: { sellerId: seller.id, domainVerified: false, trusted: false },
    });
    const http = await request(svc.app).get(`/v1/resources/${resourceId}`);
    expect(inspected.structuredContent).toEqual(http.body);
  });

  it(
    'list_supported_networks answers the networks and the facilitator schemes; get_receipt of an unknown id is a ' +
      'coded tool error',
    async () => {
      const networks = await call('list_supported_networks');
      expect(networks.structuredContent).toMatchObject({
        networks: expect.arrayContaining([expect.objectContaining({ network: 'stellar:testnet' })]),
        supported: { schemes: expect.any(Array) },
      });

      const missing = await call('get_receipt', { receiptId: 'rcp_01JD6Z8V3K9Q2W7X4M5N6P8R0T' });
      expect(missing.isError).toBe(true);
      expect(missing.structuredContent).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String) } });
      const unknown = await call('inspect_resource', { resourceId: 'res_01JD6Z8V3K9Q2W7X4M5N6P8R0T' });
      expect(unknown.structuredContent).toMatchObject({ error: { code: 'RESOURCE_NOT_FOUND' } });
    },
  );

  it('tool inputs are validated against their schemas before anything runs', async () => {
    const bad = await call('inspect_resource', { resourceId: "res_'; DROP TABLE resources;--" });
    expect(bad.isError).toBe(true);
    expect((bad.content[0] as { text: string }).text).toMatch(/Input validation error/);
    const tooLong = await call('search_resources', { q: 'x'.repeat(201) });
    expect(tooLong.isError).toBe(true);
  });

  it(
    'counts tool calls, errors, receipt fetches and network queries on /metrics by tool and network, with no ' +
      'argument text',
    async () => {
      await call('search_resources', { q: 'secret-prompt-text-xyz', network: 'stellar:pubnet' });
      const res = await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY));
      expect(res.status).toBe(200);
      const text = res.text;
      expect(text).toMatch(
        /mcp_tool_calls_total\{[^}]*tool="search_resources"[^}]*network="stellar:testnet"[^}]*outcome="ok"[^}]*\} [1-9]/,
      );
      expect(text).toMatch(/mcp_tool_calls_total\{[^}]*tool="search_resources"[^}]*network="stellar:pubnet"/);
      expect(text).toMatch(/mcp_tool_calls_total\{[^}]*tool="inspect_resource"/);
      expect(text).toMatch(/mcp_tool_errors_total\{[^}]*tool="get_receipt"[^}]*code="NOT_FOUND"[^}]*\} 1/);
      expect(text).toMatch(/mcp_receipt_fetches_total\{[^}]*outcome="error"[^}]*\} 1/);
      expect(text).toMatch(/mcp_supported_network_queries_total\{[^}]*outcome="ok"[^}]*\} 1/);
      expect(text).toMatch(/mcp_tool_call_duration_seconds_count\{[^}]*tool="search_resources"/);
      expect(text).toMatch(/mcp_server_uptime_seconds\{[^}]*environment="/);
      expect(text).toMatch(/mcp_budget_rejections_total/);
      expect(text).not.toContain('secret-prompt-text-xyz');
      expect(text).not.toContain('tide');
    },
  );

  it(
    'what an MCP client never sends is refused in the error ' + 'envelope: GET 405, a body that is not JSON-RPC 400',
    async () => {
      const get = await request(svc.app).get('/mcp');
      expect(get.status).toBe(405);
      expect(get.body).toMatchObject({
        ok: false,
        error: { code: 'METHOD_NOT_ALLOWED', requestId: expect.any(String) },
      });
      const notRpc = await request(svc.app).post('/mcp').send({ hello: 'world' });
      expect(notRpc.status).toBe(400);
      expect(notRpc.body).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
      // A plain JSON-RPC caller (curl) without the text/event-stream Accept is served JSON.
      const plain = await request(svc.app).post('/mcp').send({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
      expect(plain.status).toBe(200);
      expect(plain.body).toMatchObject({ jsonrpc: '2.0', id: 7, result: { tools: expect.any(Array) } });
    },
  );
});
