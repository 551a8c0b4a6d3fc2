#!/usr/bin/env node
/**
 * paid-api-marketplace-mcp: the marketplace's MCP server over stdio, for an AI agent on the buyer's machine
 * (Claude Desktop, Cursor, the MCP Inspector...). Configuration comes from the environment only:
 *
 * | Variable | Default | Meaning |
 * |---|---|---|
 * | MARKETPLACE_URL | http://127.0.0.1:3000 | the marketplace API |
 * | MARKETPLACE_API_KEY | unset | optional API key |
 * | MARKETPLACE_WALLET_SECRET | unset | the buyer's Stellar secret seed (S...): enables call_paid_resource |
 * | MARKETPLACE_BUDGET_PER_CALL | 0.1 | most one call may pay (decimal units of the asset) |
 * | MARKETPLACE_BUDGET_TOTAL | 1 | most this process pays in total |
 * | MARKETPLACE_RPC_URL | the RPC the marketplace lists | Soroban RPC used to read the latest ledger when signing |
 * | MARKETPLACE_MCP_METRICS_PORT | unset | serve Prometheus metrics on 127.0.0.1:<port>/metrics (0: any free port) |
 * | MARKETPLACE_ENVIRONMENT | local | the `environment` label of the metrics |
 * | MARKETPLACE_ALLOW_PRIVATE_NETWORKS | unset | `true`: call_paid_resource may reach loopback/private addresses (local
 * development) |
 * | LOCAL_DEV_DOMAINS | unset | `true`: sellers listed under `*.test` are reached on 127.0.0.1, the service's own
 * switch (local development); off, they are refused with a message naming it |
 * | MARKETPLACE_BUDGET_FILE | unset | keep the budget's commitments in this JSON file (they survive a restart) |
 *
 * stdout carries the MCP protocol only. The one diagnostic line (where metrics listen) and fatal configuration
 * errors go to stderr, and never contain the secret, the API key or any tool argument.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Keypair } from '@stellar/stellar-sdk';
import { createBuyerClient } from '../index.js';
import { createMarketplaceMcpServer } from '../mcp/marketplace-server.js';
import { createTextMetrics } from '../mcp/metrics.js';
import { toStroops } from '../core/amounts.js';
import { FileBudgetStore } from '../payments/budget.js';

function fail(message: string): never {
  process.stderr.write(`paid-api-marketplace-mcp: ${message}\n`);
  process.exit(2);
}

function amountVar(name: string, fallback: string): string {
  const v = process.env[name] ?? fallback;
  try {
    toStroops(v);
  } catch {
    fail(`${name} must be a decimal amount with at most 7 fraction digits`);
  }
  return v;
}

async function main(): Promise<void> {
  const env = process.env;
  const baseUrl = env.MARKETPLACE_URL ?? 'http://127.0.0.1:3000';
  try {
    const u = new URL(baseUrl);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
  } catch {
    fail('MARKETPLACE_URL must be an http(s) URL');
  }
  let signer: Keypair | null = null;
  if (env.MARKETPLACE_WALLET_SECRET) {
    try {
      signer = Keypair.fromSecret(env.MARKETPLACE_WALLET_SECRET.trim());
    } catch {
      fail('MARKETPLACE_WALLET_SECRET is not a Stellar secret seed (S...)'); // the value itself is never printed
    }
  }
  const budget = {
    perCall: amountVar('MARKETPLACE_BUDGET_PER_CALL', '0.1'),
    total: amountVar('MARKETPLACE_BUDGET_TOTAL', '1'),
    ...(env.MARKETPLACE_BUDGET_FILE ? { store: new FileBudgetStore(env.MARKETPLACE_BUDGET_FILE) } : {}),
  };
  const allowPrivate = env.MARKETPLACE_ALLOW_PRIVATE_NETWORKS;
  if (allowPrivate !== undefined && allowPrivate !== 'true' && allowPrivate !== 'false')
    fail('MARKETPLACE_ALLOW_PRIVATE_NETWORKS must be true or false');
  const localDev = env.LOCAL_DEV_DOMAINS;
  if (localDev !== undefined && localDev !== 'true' && localDev !== 'false')
    fail('LOCAL_DEV_DOMAINS must be true or false');
  const metricsPort = env.MARKETPLACE_MCP_METRICS_PORT;
  if (metricsPort !== undefined && !/^\d{1,5}$/.test(metricsPort))
    fail('MARKETPLACE_MCP_METRICS_PORT must be a port number');

  const buyer = createBuyerClient({
    baseUrl,
    apiKey: env.MARKETPLACE_API_KEY || undefined,
    payment: signer ? { signer, budget, rpcUrl: env.MARKETPLACE_RPC_URL || undefined } : undefined,
  });
  const metrics = createTextMetrics(env.MARKETPLACE_ENVIRONMENT ?? 'local');
  const server = createMarketplaceMcpServer({
    marketplace: buyer,
    payer: signer ? buyer : undefined,
    perCallLimit: budget.perCall,
    metrics: metrics.sink,
    allowPrivateNetworks: allowPrivate === 'true',
    localDevDomains: localDev === 'true',
    totalLimit: budget.total,
  });

  let metricsServer: http.Server | null = null;
  if (metricsPort !== undefined) {
    metricsServer = http.createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/metrics') {
        res.writeHead(200, { 'content-type': metrics.contentType });
        res.end(metrics.render());
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => metricsServer!.listen(Number(metricsPort), '127.0.0.1', resolve));
    const { port } = metricsServer.address() as AddressInfo;
    process.stderr.write(`paid-api-marketplace-mcp: metrics on http://127.0.0.1:${port}/metrics\n`);
  }

  const transport = new StdioServerTransport();
  let closing = false;
  const shutdown = () => {
    // Once: closing the server closes the transport, whose onclose lands here again.
    if (closing) return;
    closing = true;
    metricsServer?.close();
    void server
      .close()
      .catch(() => undefined)
      .finally(() => process.exit(0));
  };
  transport.onclose = shutdown;
  process.stdin.on('end', shutdown);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  await server.connect(transport);
}

main().catch(() => fail('failed to start'));
