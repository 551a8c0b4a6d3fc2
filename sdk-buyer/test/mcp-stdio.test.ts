/**
 * The buyer's MCP server over stdio: the bin (src/bin/marketplace-mcp.ts, run from source with tsx) driven by the
 * stock MCP Client through StdioClientTransport, with a funded local-network wallet, against the real marketplace
 * and a seller's paywalled endpoint. The bin's own metrics port is scraped; its stderr is searched for the secret.
 */
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Keypair } from '@stellar/stellar-sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createBuyerClient } from '../src';
import {
  eventually,
  sellerWithPaidEndpoint,
  startMarketplace,
  type Marketplace,
  type PaidEndpoint,
} from '../../test/support/marketplace';

const BIN = path.resolve(__dirname, '../src/bin/marketplace-mcp.ts');
const PRELOAD = path.resolve(__dirname, 'mcp-loopback-dns.cjs');

interface Running {
  client: Client;
  stderr: () => string;
  metricsUrl: () => Promise<string>;
}

async function startBin(env: Record<string, string>): Promise<Running> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--require', PRELOAD, '--import', 'tsx', BIN],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'pipe',
    cwd: path.resolve(__dirname, '../..'),
  });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    stderr: () => err,
    metricsUrl: () => eventually(async () => /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(err)?.[1]),
  };
}

describe('the marketplace MCP server over stdio (paid-api-marketplace-mcp)', () => {
  let m: Marketplace;
  let endpoint: PaidEndpoint;
  let buyerKey: Keypair;
  let bin: Running;

  const call = async (name: string, args: Record<string, unknown> = {}) =>
    (await bin.client.request({ method: 'tools/call', params: { name, arguments: args } }, CallToolResultSchema, {
      timeout: 60_000,
    })) as CallToolResult;

  beforeAll(async () => {
    m = await startMarketplace();
    endpoint = await sellerWithPaidEndpoint(m, { name: 'Stdio Weather', domain: 'stdio-weather.test', price: '0.25' });
    buyerKey = Keypair.random();
    await m.network.fundAccount(buyerKey.publicKey());
    await m.network.faucet(buyerKey.publicKey(), 'USDC', '10');
    await eventually(
      async () =>
        (await createBuyerClient({ baseUrl: m.baseUrl }).discovery.search({ q: 'weather forecast' })).resources.length >
        0,
    );
    bin = await startBin({
      MARKETPLACE_URL: m.baseUrl,
      MARKETPLACE_WALLET_SECRET: buyerKey.secret(),
      MARKETPLACE_BUDGET_PER_CALL: '0.3',
      MARKETPLACE_BUDGET_TOTAL: '0.4',
      MARKETPLACE_MCP_METRICS_PORT: '0',
      MARKETPLACE_ENVIRONMENT: 'test',
      // The test seller listens on 127.0.0.1: an explicit allowance (off by default).
      MARKETPLACE_ALLOW_PRIVATE_NETWORKS: 'true',
    });
  });
  afterAll(async () => {
    await bin?.client.close();
    await endpoint?.stop();
    await m?.stop();
  });

  it('with a wallet it lists the five tools, call_paid_resource among them', async () => {
    const { tools } = await bin.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'call_paid_resource',
      'get_budget',
      'get_receipt',
      'inspect_resource',
      'list_supported_networks',
      'search_resources',
    ]);
  });

  it(
    'search -> inspect -> call_paid_resource pays the endpoint: the answer, a settled receipt, balances moved by ' +
      'the price',
    async () => {
      const found = await call('search_resources', { q: 'weather forecast', type: 'http' });
      const hit = (found.structuredContent as { resources: Array<{ id: string; url: string }> }).resources.find(
        (r) => r.id === endpoint.resourceId,
      );
      expect(hit).toBeDefined();
      const inspected = await call('inspect_resource', { resourceId: endpoint.resourceId });
      expect(inspected.structuredContent).toMatchObject({
        paymentRequirements: { amount: expect.stringMatching(/^0\.25/), payTo: endpoint.wallet.publicKey() },
      });

      const buyerBefore = m.network.balance(buyerKey.publicKey(), 'USDC');
      const sellerBefore = m.network.balance(endpoint.wallet.publicKey(), 'USDC');
      const paid = await call('call_paid_resource', {
        resourceId: endpoint.resourceId,
        pathParams: { city: 'Lisbon' },
      });
      expect(paid.isError).toBeFalsy();
      const out = paid.structuredContent as {
        paid: boolean;
        result: { status: number; body: unknown };
        settlement: { transactionHash: string; receiptId: string };
        receipt: { id: string } | null;
        spent: string;
      };
      expect(out).toMatchObject({
        paid: true,
        result: { status: 200, body: { city: 'Lisbon', temperatureC: 21.5 } },
        spent: '0.2500000',
      });
      expect(out.settlement).toMatchObject({
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        receiptId: expect.stringMatching(/^rcp_/),
      });
      expect(out.receipt).toMatchObject({ id: out.settlement.receiptId, resourceId: endpoint.resourceId });
      expect(endpoint.handlerCalls).toBe(1);

      const settled = await eventually(async () => {
        const r = await call('get_receipt', { receiptId: out.settlement.receiptId });
        return (r.structuredContent as { status: string }).status === 'settled' ? r.structuredContent : null;
      });
      expect(settled).toMatchObject({ transactionHash: out.settlement.transactionHash, evidence: 'local_simulation' });
      expect(await endpoint.seller.receipts.get(out.settlement.receiptId)).toMatchObject(
        settled as Record<string, unknown>,
      ); // plus the signed receipt (JWS) only the seller reads
      expect(buyerBefore).toBe('10');
      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe('9.75');
      expect(m.network.balance(endpoint.wallet.publicKey(), 'USDC')).toBe(
        (Number(sellerBefore) + 0.25).toFixed(7).replace(/0+$/, ''),
      );
    },
  );

  it(
    'a call over the budget is refused with BUDGET_EXCEEDED before anything is signed, nothing moves, and the ' +
      'refusal is counted',
    async () => {
      const before = m.network.balance(buyerKey.publicKey(), 'USDC');
      const refused = await call('call_paid_resource', {
        resourceId: endpoint.resourceId,
        pathParams: { city: 'Porto' },
      });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({
        error: { code: 'BUDGET_EXCEEDED', details: { limit: 'total', requested: '0.2500000', remaining: '0.1500000' } },
      });
      const perCall = await call('call_paid_resource', {
        resourceId: endpoint.resourceId,
        pathParams: { city: 'Faro' },
        maxAmount: '0.1',
      });
      expect(perCall.structuredContent).toMatchObject({
        error: { code: 'BUDGET_EXCEEDED', details: { limit: 'perCall' } },
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe(before);
      expect(endpoint.handlerCalls).toBe(1);

      const metrics = await (await fetch(await bin.metricsUrl())).text();
      expect(metrics).toContain(
        'mcp_budget_rejections_total{environment="test",network="stellar:testnet",limit="total"} 1',
      );
      expect(metrics).toContain(
        'mcp_budget_rejections_total{environment="test",network="stellar:testnet",limit="perCall"} 1',
      );
      expect(metrics).toContain(
        'mcp_tool_calls_total{environment="test",tool="call_paid_resource",network="stellar:testnet",outcome="ok"} 1',
      );
      expect(metrics).toContain(
        'mcp_tool_errors_total{environment="test",tool="call_paid_resource",network="stellar:testnet",' +
          'code="BUDGET_EXCEEDED"} 2',
      );
      expect(metrics).toMatch(
        /mcp_receipt_fetches_total\{environment="test",network="stellar:testnet",outcome="ok"\} [1-9]/,
      );
      expect(metrics).toMatch(/mcp_server_uptime_seconds\{environment="test"\} \d/);
      // No secret, argument or address in metrics or on stderr.
      for (const text of [metrics, bin.stderr()]) {
        expect(text).not.toContain(buyerKey.secret());
        expect(text).not.toContain(buyerKey.publicKey());
        expect(text).not.toContain('Porto');
      }
    },
  );

  it('without a wallet the bin offers only the read-only tools', async () => {
    const readOnly = await startBin({ MARKETPLACE_URL: m.baseUrl });
    try {
      const { tools } = await readOnly.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        'get_receipt',
        'inspect_resource',
        'list_supported_networks',
        'search_resources',
      ]);
    } finally {
      await readOnly.client.close();
    }
  });

  it('a malformed wallet secret stops the bin with a message that does not echo it', async () => {
    const bad = 'SNOTAREALSECRETxyz123';
    const run = spawnSync(process.execPath, ['--import', 'tsx', BIN], {
      env: { PATH: process.env.PATH ?? '', MARKETPLACE_URL: m.baseUrl, MARKETPLACE_WALLET_SECRET: bad },
      cwd: path.resolve(__dirname, '../..'),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('MARKETPLACE_WALLET_SECRET is not a Stellar secret seed');
    expect(run.stderr).not.toContain(bad);
  });
});
