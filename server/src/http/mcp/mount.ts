/**
 * The service's mount of the marketplace MCP server at /mcp: Streamable HTTP, stateless (a fresh McpServer and
 * transport per POST, JSON answers), the four read-only tools. The server itself is the buyer SDK's, imported
 * through the package's `./mcp` export (a workspace dependency). The type check and tsx (`npm run dev`) map that
 * export to its source, sdk-buyer/src/mcp/marketplace-server.ts (`paths` in tsconfig.base.json), and so does Jest
 * (server/jest.config.js), so none of them sees a stale build; the server's build (tsconfig.build.json, no `paths`)
 * and node running it (`npm start`) resolve it to the package's built dist (root `prepare` builds it, and
 * `npm start` rebuilds it when stale). The service never holds a buyer's wallet: no payer is given. Its
 * `call_paid_resource` (issue 32) is the x402 MCP transport binding (`forwardPayments`): the first call answers the
 * seller's PaymentRequired as a tool error, the agent's own client signs and calls again with `_meta["x402/payment"]`,
 * and the server forwards that payment to the seller (which verifies and settles through this service) and answers the
 * seller's result with `_meta["x402/payment-response"]`. Sellers are reached by the buyer SDK's address-checked
 * fetch: public addresses only, `*.test` names on 127.0.0.1 only with LOCAL_DEV_DOMAINS=true.
 *
 * The tools read through the service's own operation handlers (MarketplacePort below), as a public caller: the same
 * use cases and presenters as /v1, without a second HTTP hop. The MCP POST itself went through the app's request
 * id, metrics, credentials, rate limit and JSON body limit like every route; a batch holds at most MAX_BATCH
 * messages and each message beyond the first pays one more rate-limit point (429 RATE_LIMITED when they run out).
 *
 * Requests an MCP client would never send are answered in the error envelope before the MCP transport sees them:
 * a body that is not a JSON-RPC message (400 INVALID_REQUEST), an Accept that excludes JSON (400), an unsupported
 * MCP-Protocol-Version (400), GET/DELETE (405 METHOD_NOT_ALLOWED: no sessions, no server-initiated stream).
 */
import express, { type Router } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { createMarketplaceMcpServer, type MarketplacePort } from '@paid-api-marketplace/sdk-buyer/mcp';
import type { Handlers } from '../operation-types';
import type { McpMetrics } from '../../metrics/mcp';
import { PUBLIC } from '../../domain/auth/principal';
import { DomainError } from '../../domain/errors';
import type { ChargeRequest } from '../rate-limit';

export interface McpMountDeps {
  handlers: Handlers;
  metrics: McpMetrics;
  version: string;
  /** Charges more rate-limit points to the request's bucket: each JSON-RPC message of a batch pays one. */
  charge?: ChargeRequest;
  /** LOCAL_DEV_DOMAINS: call_paid_resource reaches sellers listed under `*.test` on 127.0.0.1 (local development). */
  localDevDomains?: boolean;
}

/** JSON-RPC messages in one POST at most (MCP clients send one; the 2025-06-18 protocol dropped batches). */
export const MAX_BATCH = 10;

/** The read side of the marketplace over the service's handlers, as the public caller. */
export function marketplaceFromHandlers(h: Handlers, requestId: string): MarketplacePort {
  const ctx = (params: Record<string, string>, query: Record<string, unknown> = {}) =>
    ({ params, query, body: undefined, principal: PUBLIC, requestId, header: () => undefined }) as never;
  const body = async <T>(p: Promise<{ body: unknown }>): Promise<T> => (await p).body as T;
  return {
    search: (q) => body(h.searchResources(ctx({}, { limit: 20, ...q }))),
    list: (q) => body(h.listDiscoveryResources(ctx({}, { limit: 20, ...q }))),
    getResource: (id) => body(h.getResource(ctx({ id }))),
    listNetworks: () => body(h.listNetworks(ctx({}))),
    supported: () => body(h.getSupported(ctx({}))),
    getReceipt: (receiptId) => body(h.getReceipt(ctx({ receiptId }))),
  };
}

/** Checks the request and answers how many JSON-RPC messages it carries. */
function checkTransportRules(req: express.Request): number {
  const accept = req.headers.accept;
  if (accept && !/application\/json|\*\/\*|application\/\*/i.test(accept))
    throw new DomainError(
      'INVALID_REQUEST',
      'Accept must allow application/json (MCP Streamable HTTP: application/json, text/event-stream)',
    );
  if (!req.is('application/json')) throw new DomainError('INVALID_REQUEST', 'Content-Type must be application/json');
  const version = req.headers['mcp-protocol-version'];
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version)))
    throw new DomainError('INVALID_REQUEST', 'Unsupported MCP-Protocol-Version');
  const messages: unknown[] = Array.isArray(req.body) ? req.body : [req.body];
  if (messages.length === 0 || messages.length > MAX_BATCH)
    throw new DomainError('INVALID_REQUEST', `A batch holds 1 to ${MAX_BATCH} JSON-RPC messages`);
  for (const m of messages)
    if (!JSONRPCMessageSchema.safeParse(m).success)
      throw new DomainError('INVALID_REQUEST', 'The body is not a JSON-RPC 2.0 message of the Model Context Protocol');
  // Answers are always JSON (enableJsonResponse); a client that accepts JSON is served even without text/event-stream.
  req.headers.accept = 'application/json, text/event-stream';
  return messages.length;
}

export function mcpRouter(deps: McpMountDeps): Router {
  const router = express.Router();
  router.post('/', async (req, res, next) => {
    res.locals.routeTemplate = '/mcp';
    res.locals.operationId = 'sendMcpMessage';
    try {
      const messages = checkTransportRules(req);
      // The POST paid one point in the rate limiter; every further message of a batch pays one more.
      if (messages > 1 && deps.charge) await deps.charge(req, res, messages - 1);
    } catch (err) {
      return next(err);
    }
    const server = createMarketplaceMcpServer({
      marketplace: marketplaceFromHandlers(deps.handlers, String(res.locals.requestId)),
      metrics: deps.metrics.sink,
      // call_paid_resource by the x402 MCP transport: the agent's wallet signs, the seller settles through us.
      forwardPayments: true,
      localDevDomains: deps.localDevDomains ?? false,
      name: 'paid-api-marketplace',
      version: deps.version,
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (err) {
      if (!res.headersSent) next(err);
    }
  });
  router.all('/', (_req, res, next) => {
    res.locals.routeTemplate = '/mcp';
    res.setHeader('Allow', 'POST');
    next(
      new DomainError(
        'METHOD_NOT_ALLOWED',
        'The MCP endpoint is stateless: POST only (no sessions, no server-initiated stream)',
      ),
    );
  });
  return router;
}
