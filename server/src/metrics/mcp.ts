import client from 'prom-client';

/**
 * MCP metrics (service contract: server uptime, tool call count and latency, tool errors by code,
 * search/inspect/paid-call tool calls, budget rejections, receipt fetches, supported-network queries), for the
 * marketplace MCP server mounted at /mcp. Defined on the one registry by createMetrics; the mount passes `sink` to
 * the MCP server (sdk-buyer/src/mcp/marketplace-server.ts), whose events they count. The buyer SDK's stdio bin
 * exposes the same names (sdk-buyer/src/mcp/metrics.ts).
 *
 * Labels come from fixed sets only: the tool name (five known tools), the network (`stellar:testnet`,
 * `stellar:pubnet` or `none`), an UPPER_SNAKE error code, the outcome (ok/error), the budget limit. No prompt,
 * argument, query text, address, secret or payment credential is ever a label. Every series also carries the
 * registry's `environment` default label. The service has no paying tool, so budget rejections stay 0 here
 * (the series exists so dashboards and alerts read the same names on both entrances).
 */
const TOOLS = new Set([
  'search_resources',
  'inspect_resource',
  'list_supported_networks',
  'get_receipt',
  'call_paid_resource',
]);
const tool = (name: string) => (TOOLS.has(name) ? name : 'unknown');
const network = (n: string) => (n === 'stellar:testnet' || n === 'stellar:pubnet' ? n : 'none');
const code = (c: string) => (/^[A-Z][A-Z0-9_]{1,47}$/.test(c) ? c : 'INTERNAL_ERROR');

export interface McpToolCallEvent {
  tool: string;
  network: string;
  code: string | null;
  seconds: number;
}

export interface McpMetrics {
  uptime: client.Gauge;
  toolCalls: client.Counter<'tool' | 'network' | 'outcome'>;
  toolLatency: client.Histogram<'tool'>;
  toolErrors: client.Counter<'tool' | 'network' | 'code'>;
  budgetRejections: client.Counter<'network' | 'limit'>;
  receiptFetches: client.Counter<'network' | 'outcome'>;
  networkQueries: client.Counter<'outcome'>;
  /** What the MCP server reports to (structurally the buyer SDK's McpMetricsSink). */
  sink: {
    toolCall(event: McpToolCallEvent): void;
    budgetRejection(event: { network: string; limit: 'perCall' | 'total' }): void;
  };
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function defineMcpMetrics(registry: client.Registry): McpMetrics {
  const startedAt = Date.now();
  const m = {
    uptime: new client.Gauge({
      name: 'mcp_server_uptime_seconds',
      help: 'Seconds since the MCP server (/mcp) of this process started',
      registers: [registry],
      collect() {
        this.set((Date.now() - startedAt) / 1000);
      },
    }),
    toolCalls: new client.Counter({
      name: 'mcp_tool_calls_total',
      help: 'MCP tool calls by tool (search, inspect, paid call...), network and outcome',
      labelNames: ['tool', 'network', 'outcome'] as const,
      registers: [registry],
    }),
    toolLatency: new client.Histogram({
      name: 'mcp_tool_call_duration_seconds',
      help: 'MCP tool call latency by tool',
      labelNames: ['tool'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [registry],
    }),
    toolErrors: new client.Counter({
      name: 'mcp_tool_errors_total',
      help: 'MCP tool calls that answered an error, by stable error code',
      labelNames: ['tool', 'network', 'code'] as const,
      registers: [registry],
    }),
    budgetRejections: new client.Counter({
      name: 'mcp_budget_rejections_total',
      help: 'Paid calls refused by the buyer budget before anything was signed',
      labelNames: ['network', 'limit'] as const,
      registers: [registry],
    }),
    receiptFetches: new client.Counter({
      name: 'mcp_receipt_fetches_total',
      help: 'get_receipt tool calls',
      labelNames: ['network', 'outcome'] as const,
      registers: [registry],
    }),
    networkQueries: new client.Counter({
      name: 'mcp_supported_network_queries_total',
      help: 'list_supported_networks tool calls',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
  return {
    ...m,
    sink: {
      toolCall(e) {
        const t = tool(e.tool);
        const net = network(e.network);
        const outcome = e.code ? 'error' : 'ok';
        m.toolCalls.inc({ tool: t, network: net, outcome });
        m.toolLatency.observe({ tool: t }, e.seconds);
        if (e.code) m.toolErrors.inc({ tool: t, network: net, code: code(e.code) });
        if (t === 'get_receipt') m.receiptFetches.inc({ network: net, outcome });
        if (t === 'list_supported_networks') m.networkQueries.inc({ outcome });
      },
      budgetRejection(e) {
        m.budgetRejections.inc({ network: network(e.network), limit: e.limit === 'total' ? 'total' : 'perCall' });
      },
    },
  };
}
