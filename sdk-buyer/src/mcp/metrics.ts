/**
 * MCP metrics of the marketplace MCP server (service contract: server uptime, tool call count and latency, tool
 * errors by code, search/inspect/paid-call tool calls, budget rejections, receipt fetches, supported-network
 * queries). The server reports events to a sink; the service implements it with prom-client on its /metrics
 * (server/src/metrics/mcp.ts), the stdio bin with the small text registry below. Both use the same names.
 *
 * Label values come from fixed sets only: the tool name, the network (`stellar:testnet`, `stellar:pubnet` or
 * `none`), an error code (UPPER_SNAKE, else INTERNAL_ERROR) and the budget limit. No argument, query text, URL,
 * address, secret or payment credential is ever a label or a log field.
 */
export const MARKETPLACE_TOOLS = [
  'search_resources',
  'inspect_resource',
  'list_supported_networks',
  'get_receipt',
  'call_paid_resource',
  'get_budget',
] as const;
export type MarketplaceToolName = (typeof MARKETPLACE_TOOLS)[number];

export interface ToolCallEvent {
  tool: MarketplaceToolName;
  /** `stellar:testnet`, `stellar:pubnet` or `none`. */
  network: string;
  /** null when the call succeeded, else its stable error code. */
  code: string | null;
  seconds: number;
}

export interface McpMetricsSink {
  toolCall(event: ToolCallEvent): void;
  budgetRejection(event: { network: string; limit: 'perCall' | 'total' }): void;
}

export const MCP_METRIC_NAMES = {
  uptime: 'mcp_server_uptime_seconds',
  toolCalls: 'mcp_tool_calls_total',
  toolLatency: 'mcp_tool_call_duration_seconds',
  toolErrors: 'mcp_tool_errors_total',
  budgetRejections: 'mcp_budget_rejections_total',
  receiptFetches: 'mcp_receipt_fetches_total',
  networkQueries: 'mcp_supported_network_queries_total',
} as const;

export const MCP_LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function safeNetwork(network: unknown): string {
  return network === 'stellar:testnet' || network === 'stellar:pubnet' ? network : 'none';
}

export function safeCode(code: unknown): string {
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,47}$/.test(code) ? code : 'INTERNAL_ERROR';
}

/**
 * A minimal Prometheus text-exposition registry (no dependency) for the stdio bin's optional metrics port.
 * Series are keyed by their label values, which come from the fixed sets above, so their number is bounded.
 */
export function createTextMetrics(environment: string) {
  const startedAt = Date.now();
  const counters = new Map<string, Map<string, number>>();
  const histogram = new Map<string, { buckets: number[]; sum: number; count: number }>();
  const env = safeLabel(environment);

  const inc = (name: string, labels: Record<string, string>) => {
    const key = labelText({ environment: env, ...labels });
    const series = counters.get(name) ?? new Map<string, number>();
    series.set(key, (series.get(key) ?? 0) + 1);
    counters.set(name, series);
  };

  const sink: McpMetricsSink = {
    toolCall({ tool, network, code, seconds }) {
      const net = safeNetwork(network);
      inc(MCP_METRIC_NAMES.toolCalls, { tool, network: net, outcome: code ? 'error' : 'ok' });
      if (code) inc(MCP_METRIC_NAMES.toolErrors, { tool, network: net, code: safeCode(code) });
      if (tool === 'get_receipt')
        inc(MCP_METRIC_NAMES.receiptFetches, { network: net, outcome: code ? 'error' : 'ok' });
      if (tool === 'list_supported_networks') inc(MCP_METRIC_NAMES.networkQueries, { outcome: code ? 'error' : 'ok' });
      const key = labelText({ environment: env, tool });
      const h = histogram.get(key) ?? { buckets: MCP_LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 };
      MCP_LATENCY_BUCKETS.forEach((b, i) => {
        if (seconds <= b) h.buckets[i] += 1;
      });
      h.sum += seconds;
      h.count += 1;
      histogram.set(key, h);
    },
    budgetRejection({ network, limit }) {
      inc(MCP_METRIC_NAMES.budgetRejections, { network: safeNetwork(network), limit });
    },
  };

  const help: Record<string, string> = {
    [MCP_METRIC_NAMES.toolCalls]: 'MCP tool calls by tool, network and outcome',
    [MCP_METRIC_NAMES.toolErrors]: 'MCP tool calls that answered an error, by stable error code',
    [MCP_METRIC_NAMES.budgetRejections]: 'Paid calls refused by the buyer budget before anything was signed',
    [MCP_METRIC_NAMES.receiptFetches]: 'get_receipt tool calls',
    [MCP_METRIC_NAMES.networkQueries]: 'list_supported_networks tool calls',
  };

  function render(): string {
    const out: string[] = [];
    out.push(
      `# HELP ${MCP_METRIC_NAMES.uptime} Seconds since this MCP server started`,
      `# TYPE ${MCP_METRIC_NAMES.uptime} gauge`,
    );
    out.push(`${MCP_METRIC_NAMES.uptime}{environment="${env}"} ${(Date.now() - startedAt) / 1000}`);
    for (const [name, text] of Object.entries(help)) {
      out.push(`# HELP ${name} ${text}`, `# TYPE ${name} counter`);
      for (const [labels, value] of counters.get(name) ?? []) out.push(`${name}{${labels}} ${value}`);
    }
    const h = MCP_METRIC_NAMES.toolLatency;
    out.push(`# HELP ${h} MCP tool call latency by tool`, `# TYPE ${h} histogram`);
    for (const [labels, v] of histogram) {
      MCP_LATENCY_BUCKETS.forEach((b, i) => out.push(`${h}_bucket{${labels},le="${b}"} ${v.buckets[i]}`));
      out.push(
        `${h}_bucket{${labels},le="+Inf"} ${v.count}`,
        `${h}_sum{${labels}} ${v.sum}`,
        `${h}_count{${labels}} ${v.count}`,
      );
    }
    return out.join('\n') + '\n';
  }

  return { sink, render, contentType: 'text/plain; version=0.0.4; charset=utf-8' };
}

function safeLabel(v: string): string {
  return /^[A-Za-z0-9_.:-]{1,64}$/.test(v) ? v : 'unknown';
}

function labelText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
}
