/**
 * statelessMcpHandler(): serves an MCP server over Streamable HTTP (the MCP SDK's StreamableHTTPServerTransport,
 * stateless, JSON answers) from Express or plain node:http. A fresh server is built per request by your factory,
 * the SDK's pattern for stateless servers, so nothing of one call leaks into another. POST carries the JSON-RPC
 * messages; GET and DELETE answer 405 (no sessions, no server-initiated stream).
 *
 *     app.post('/mcp', express.json(), statelessMcpHandler(() => buildServer()));
 *
 * A server built without `instructions` is given PAID_TOOL_INSTRUCTIONS (the tools are paid with x402, and how to
 * pay), so an agent learns at initialize what the first unpaid answer means; a server's own instructions are kept.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { PAID_TOOL_INSTRUCTIONS } from './paid-tool.js';

/** Loaded on first use: the MCP SDK is an optional peer, so the package's main entry must load without it. */
const loadTransport = () => import('@modelcontextprotocol/sdk/server/streamableHttp.js');
let transportModule: ReturnType<typeof loadTransport> | null = null;

export function statelessMcpHandler(
  factory: () => McpServer,
): (req: IncomingMessage & { body?: unknown }, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST', 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32000, message: 'Method not allowed: this MCP server is stateless (POST only)' },
          id: null,
        }),
      );
      return;
    }
    const { StreamableHTTPServerTransport } = await (transportModule ??= loadTransport());
    const server = withPaidToolInstructions(factory());
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch {
      if (!res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'application/json' });
        res.end(
          JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }),
        );
      }
    }
  };
}

/**
 * The paid-tool instructions on a server that has none: the MCP SDK reads them from its Server at initialize
 * (`_instructions`, set only by the constructor); a server whose SDK keeps them elsewhere is left as it is.
 */
function withPaidToolInstructions(server: McpServer): McpServer {
  const inner = server.server as unknown as { _instructions?: string };
  if ('_instructions' in inner && !inner._instructions) inner._instructions = PAID_TOOL_INSTRUCTIONS;
  return server;
}
