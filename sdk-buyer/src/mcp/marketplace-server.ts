/**
 * The marketplace's MCP server: what an AI agent uses to find, inspect and pay for paid resources from its own
 * interface. One implementation, served two ways:
 *
 * - by the stdio bin of this package (`paid-api-marketplace-mcp`, src/bin/marketplace-mcp.ts) on the buyer's
 *   machine, with the buyer's wallet and budget: all five tools;
 * - by the service at `/mcp` (Streamable HTTP, stateless; server/src/http/mcp): the four read-only tools and
 *   `call_paid_resource` paid by the AGENT's wallet with the x402 MCP transport (`forwardPayments`, see
 *   registerForwardingCall). The service never holds a buyer's wallet.
 *
 * Tools (names are part of the contract):
 * - `search_resources`: discovery with its filters (ranked search when `q` is given, else the newest first);
 * - `inspect_resource`: one resource: payment requirements, input/output schemas, seller trust, conformance state;
 * - `list_supported_networks`: the networks, their assets and what the facilitator settles;
 * - `get_receipt`: a receipt (evidence of a paid call);
 * - `call_paid_resource` (with a wallet): pays an `http` resource with payAndFetch or an `mcp` resource with
 *   payAndCallTool, within the configured budget, and answers with the result and the receipt; (remote, without a
 *   wallet) answers the seller's PaymentRequired, then forwards the agent's signed payment;
 * - `get_budget`: with a wallet, the per-call limit, total, committed, spent, released and remaining (limits given,
 *   else the payer's own budget's); on the remote form, where the budget lives: the agent's own client (`heldBy`).
 *
 * Every tool declares an outputSchema and the server gives `instructions` (issue 32). Sellers listed under `*.test`
 * are reached only with `localDevDomains` (the service's LOCAL_DEV_DOMAINS switch), else refused naming it.
 *
 * Every tool answers `structuredContent` (and the same JSON as text). A failure is a tool result with `isError`
 * and `structuredContent.error = { code, message, details? }`; codes are always one of MCP_TOOL_ERROR_CODES (the
 * API's stable codes, the SDK's transport codes and BUDGET_EXCEEDED, PAYMENT_REJECTED, NO_PAYABLE_REQUIREMENT,
 * UNKNOWN_ASSET, TERMS_CHANGED, UPSTREAM_ERROR, ADDRESS_NOT_ALLOWED, SETTLEMENT_UNCONFIRMED); a seller's refusal
 * code outside the list becomes PAYMENT_REJECTED with details.reportedCode; a payment required (remote form)
 * is the x402 PaymentRequired itself, not an error object. Messages never carry secrets: unexpected errors answer a
 * fixed text.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { components } from '../generated/openapi.js';
import { BudgetExceededError } from '../payments/budget.js';
import { AMOUNT_PATTERN, fromStroops, toStroops } from '../core/amounts.js';
import {
  PaymentFailedError,
  type ExpectedTerms,
  type PaidFetchResult,
  type PayAndFetchInit,
} from '../payments/pay-and-fetch.js';
import { BlockedAddressError, LOCAL_DEV_DOMAINS_OFF, safeFetch } from '../payments/safe-fetch.js';
import { isLocalDevHost } from '../core/local-dev-fetch.js';
import { assetContractId, normalizeNetwork } from '../payments/requirements.js';
import { ApiError } from '../core/errors.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import {
  X402_PAYMENT_META,
  X402_PAYMENT_RESPONSE_META,
  paymentRequiredOf,
  type PaidToolCallResult,
  type PayAndCallToolOptions,
} from './pay-and-call-tool.js';
import { safeCode, safeNetwork, type MarketplaceToolName, type McpMetricsSink } from './metrics.js';

type Schemas = components['schemas'];

/** The read-only tools (what the service's /mcp lists). */
export const MARKETPLACE_READ_TOOLS = [
  'search_resources',
  'inspect_resource',
  'list_supported_networks',
  'get_receipt',
] as const;

type DiscoveryFilters = {
  network?: 'stellar:testnet' | 'stellar:pubnet';
  asset?: string;
  type?: 'http' | 'mcp';
  sellerId?: string;
  minPrice?: string;
  maxPrice?: string;
  extension?: 'bazaar' | 'mcp';
  minUptime?: number;
  verifiedOnly?: boolean;
  liveOnly?: boolean;
  cursor?: string;
  limit?: number;
};

/** What the tools read. A BuyerClient is one (over HTTP); the service implements it over its own handlers. */
export interface MarketplacePort {
  search(query: DiscoveryFilters & { q: string }): Promise<Schemas['SearchPage']>;
  list(query: DiscoveryFilters): Promise<Schemas['DiscoveryPage']>;
  getResource(id: string): Promise<Schemas['ResourceDetail']>;
  listNetworks(): Promise<Schemas['NetworkList']>;
  supported(): Promise<Schemas['Supported']>;
  getReceipt(id: string): Promise<Schemas['Receipt']>;
}

/** The paying side (a BuyerClient created with `payment`). */
export interface MarketplacePayer {
  payAndFetch(target: string, init?: PayAndFetchInit): Promise<PaidFetchResult>;
  payAndCallTool(
    client: Client,
    name: string,
    args?: Record<string, unknown>,
    opts?: PayAndCallToolOptions,
  ): Promise<PaidToolCallResult>;
  readonly spent: string;
  /** The payer's budget (committed, spent, released), when it is a BuyerClient. */
  readonly budget?: {
    readonly committed: string;
    readonly spent: string;
    readonly released: string;
    readonly limits?: { perCall: string | null; total: string | null };
  };
}

interface BuyerClientLike {
  discovery: { search: MarketplacePort['search']; list: MarketplacePort['list'] };
  resources: { get: MarketplacePort['getResource'] };
  networks: { list: MarketplacePort['listNetworks'] };
  supported: MarketplacePort['supported'];
  receipts: { get: MarketplacePort['getReceipt'] };
}

export interface MarketplaceMcpOptions {
  /** Where the tools read: a BuyerClient, or any MarketplacePort. */
  marketplace: MarketplacePort | BuyerClientLike;
  /** A wallet-configured BuyerClient: enables `call_paid_resource`. Never given on the service. */
  payer?: MarketplacePayer;
  /**
   * The payer's per-call budget (decimal). Default: the payer's own (`payer.budget.limits.perCall`, a BuyerClient's
   * `budget.perCall`). An agent's `maxAmount` can only lower it: payAndFetch's `maxAmount` replaces the client's
   * per-call budget, so without this cap an agent could raise its own limit.
   */
  perCallLimit?: string;
  /** The fetch used to reach sellers (HTTP resources and MCP servers). Default: global fetch. */
  fetch?: typeof globalThis.fetch;
  /**
   * Let call_paid_resource reach loopback, private and link-local addresses (local development: sellers on
   * 127.0.0.1). Default false: such URLs are refused (ADDRESS_NOT_ALLOWED), every redirect hop too (at most 3).
   */
  allowPrivateNetworks?: boolean;
  /** Name resolution for that address check. Default: the system resolver (every address of the name). */
  lookup?: (hostname: string) => Promise<string[]>;
  /**
   * Local development domains, the service's LOCAL_DEV_DOMAINS switch: sellers listed under `*.test` are reached on
   * 127.0.0.1 (localDevFetch). Off (default), such a seller is refused with a message naming the switch.
   */
  localDevDomains?: boolean;
  /** The payer's total budget (decimal), shown by `get_budget` as `total` and `remaining`. Default: the payer's own. */
  totalLimit?: string;
  /**
   * The remote form (the service's /mcp): `call_paid_resource` without a payer, by the x402 MCP transport binding
   * (specs/transports-v2/mcp.md). The first call answers a tool error whose structuredContent is the seller's x402
   * PaymentRequired; the agent's client signs with its own wallet and calls again with the payment in
   * `params._meta["x402/payment"]`; the server forwards it to the seller (PAYMENT-SIGNATURE), which verifies and
   * settles through the marketplace, and answers the seller's result with `_meta["x402/payment-response"]`. The
   * server never holds a buyer key.
   */
  forwardPayments?: boolean;
  metrics?: McpMetricsSink;
  /** Server name and version announced to MCP clients. */
  name?: string;
  version?: string;
}

/** A BuyerClient as a MarketplacePort. */
export function marketplacePortOf(client: MarketplacePort | BuyerClientLike): MarketplacePort {
  if (!('discovery' in client)) return client;
  return {
    search: (q) => client.discovery.search(q),
    list: (q) => client.discovery.list(q),
    getResource: (id) => client.resources.get(id),
    listNetworks: () => client.networks.list(),
    supported: () => client.supported(),
    getReceipt: (id) => client.receipts.get(id),
  };
}

/** The API's codes (the contract's ErrorCode enum; the Record makes the compiler keep this list complete). */
const API_ERROR_CODES: Record<Schemas['ErrorCode'], true> = {
  INVALID_REQUEST: true,
  CATALOG_VALIDATION_FAILED: true,
  ROUTE_TEMPLATE_INVALID: true,
  UNSUPPORTED_NETWORK: true,
  UNSUPPORTED_ASSET: true,
  INVALID_PAYMENT_PAYLOAD: true,
  UNAUTHORIZED: true,
  PAYMENT_REQUIRED: true,
  FORBIDDEN: true,
  SELLER_DOMAIN_UNVERIFIED: true,
  RESOURCE_NOT_FOUND: true,
  NOT_FOUND: true,
  METHOD_NOT_ALLOWED: true,
  REPLAY_DETECTED: true,
  CONFLICT: true,
  IDEMPOTENCY_CONFLICT: true,
  PAYLOAD_TOO_LARGE: true,
  INVALID_SIGNATURE: true,
  AUTH_EXPIRED: true,
  AMOUNT_MISMATCH: true,
  ASSET_MISMATCH: true,
  RECIPIENT_MISMATCH: true,
  TRUSTLINE_REQUIRED: true,
  INSUFFICIENT_BALANCE: true,
  RATE_LIMITED: true,
  INTERNAL_ERROR: true,
  SETTLEMENT_FAILED: true,
  SERVICE_UNAVAILABLE: true,
  ACCOUNT_NOT_FOUND: true,
  SIMULATION_FAILED: true,
  PAYEE_NOT_SELLER: true,
  SELF_PAYMENT: true,
  AMOUNT_BELOW_MINIMUM: true,
  FEE_BUDGET_EXHAUSTED: true,
  UNSUPPORTED_MEDIA_TYPE: true,
  DUPLICATE_RESOURCE: true,
};

/**
 * Every code a tool error of this server can carry (issue 32): the API's ErrorCode enum, the buyer SDK's transport
 * codes (NETWORK_ERROR: the marketplace could not be reached; BAD_GATEWAY, HTTP_ERROR: an answer outside the error
 * envelope) and the MCP tools' own. A code outside this list (a seller's paywall may say anything) is reported as
 * PAYMENT_REJECTED (a refused payment) or UPSTREAM_ERROR, with the reported code in `details.reportedCode`.
 * Documented in sdk-buyer/README.md ("Error codes of the MCP tools").
 */
export const MCP_TOOL_ERROR_CODES: readonly string[] = [
  ...Object.keys(API_ERROR_CODES),
  'NETWORK_ERROR',
  'BAD_GATEWAY',
  'HTTP_ERROR',
  'BUDGET_EXCEEDED',
  'PAYMENT_REJECTED',
  'NO_PAYABLE_REQUIREMENT',
  'UNKNOWN_ASSET',
  'TERMS_CHANGED',
  'UPSTREAM_ERROR',
  'ADDRESS_NOT_ALLOWED',
  'SETTLEMENT_UNCONFIRMED',
];
const DOCUMENTED_CODES = new Set(MCP_TOOL_ERROR_CODES);

/** A tool failure with a stable code. */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Most of a paid HTTP answer read and passed to the agent (the rest is cut, `truncated: true`); also the POST body
 * cap. */
const MAX_BODY_BYTES = 65_536;
const MAX_BODY_CHARS = MAX_BODY_BYTES;

// ---- input schemas (every field bounded) ------------------------------------------------------------------------
const network = z.enum(['stellar:testnet', 'stellar:pubnet']);
const amount = z.string().regex(AMOUNT_PATTERN, 'a decimal amount with at most 7 fraction digits');
const resourceId = z.string().regex(/^res_[0-9A-HJKMNP-TV-Z]{26}$/, 'a resource id (res_...)');
const receiptId = z.string().regex(/^rcp_[0-9A-HJKMNP-TV-Z]{26}$/, 'a receipt id (rcp_...)');

// ---- output schemas (issue 32) ----------------------------------------------------------------------------------
// Every tool declares what its structuredContent holds. A stock MCP client checks structuredContent against the
// outputSchema even on a tool error, so each schema also admits the error answer ({ error: { code, message } }) and
// the x402 PaymentRequired (`x402Version`, `accepts`, `error` as a string): success fields are optional, extra
// fields are allowed.
const toolError = z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }).passthrough();
const errorField = z
  .union([z.string(), toolError])
  .optional()
  .describe('On a failed call: { code, message, details? } (an x402 PaymentRequired: its reason string)');
/** A tool's answer: its success fields (each optional), the error field, and any other field allowed. */
const toolAnswer = <T extends z.ZodRawShape>(shape: T) => z.object({ ...shape, error: errorField }).passthrough();
const page = toolAnswer({
  resources: z.array(z.record(z.unknown())).optional(),
  items: z.array(z.record(z.unknown())).optional(),
  nextCursor: z.string().nullable().optional(),
});
const resourceOut = toolAnswer({
  id: z.string().optional(),
  type: z.enum(['http', 'mcp']).optional(),
  name: z.string().optional(),
  url: z.string().optional(),
  amount: z.string().optional(),
  network: z.string().optional(),
  paymentRequirements: z.record(z.unknown()).optional(),
});
const networksOut = toolAnswer({
  networks: z.array(z.record(z.unknown())).optional(),
  supported: z.record(z.unknown()).optional(),
});
const receiptOut = toolAnswer({
  id: z.string().optional(),
  status: z.string().optional(),
  transactionHash: z.string().nullable().optional(),
  network: z.string().optional(),
});
const callOut = toolAnswer({
  resourceId: z.string().optional(),
  type: z.enum(['http', 'mcp']).optional(),
  paid: z.boolean().optional(),
  amount: z.string().optional(),
  settlement: z.record(z.unknown()).nullable().optional(),
  receipt: z.record(z.unknown()).nullable().optional(),
  result: z.record(z.unknown()).optional(),
  x402Version: z
    .number()
    .optional()
    .describe('Payment required (remote /mcp): sign one of `accepts` and call again with it in _meta["x402/payment"]'),
  accepts: z.array(z.record(z.unknown())).optional(),
});
const budgetOut = toolAnswer({
  perCall: z.string().nullable().optional().describe('Most one call may pay'),
  total: z.string().nullable().optional().describe('Most this agent may pay in all'),
  committed: z.string().optional().describe('Signed, not yet settled or proven unusable'),
  spent: z.string().optional().describe('Settled'),
  released: z.string().optional().describe('Signed, then proven unusable (no longer counted)'),
  remaining: z.string().nullable().optional().describe('total - committed - spent; null without a total'),
  heldBy: z
    .enum(['server', 'client'])
    .optional()
    .describe('client: this server holds no budget (remote /mcp); your own client keeps it'),
  message: z.string().optional(),
});

/** Where the budget of an agent paying through the remote /mcp lives (its get_budget answer and instructions). */
export const CLIENT_BUDGET =
  "you pay each call with your own wallet, so your spending limits live in your own client's x402 payment " +
  'wrapper, which signs (the buyer SDK: createBuyerClient({ payment: { signer, budget: { perCall, total } } }) ' +
  'with payAndCallTool; read what is left with buyer.budget). Ask your client, not this server.';

/** What the servers tell an agent at initialize (MCP `instructions`). */
export const MARKETPLACE_INSTRUCTIONS_READ =
  'A marketplace of paid HTTP endpoints and paid MCP tools, paid per call in USDC on Stellar (x402). Find with ' +
  'search_resources, read the full terms (price, network, payTo, input schema) with inspect_resource, check a ' +
  'paid call with get_receipt.';

const searchInput = {
  q: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('What you are looking for (ranked text search). Omit to list the newest resources.'),
  network: network.optional().describe('Only resources paid on this network'),
  asset: z
    .string()
    .regex(/^[A-Za-z0-9]{1,12}$/)
    .optional()
    .describe('Only resources priced in this asset code, e.g. USDC'),
  type: z.enum(['http', 'mcp']).optional().describe('http: a paid HTTP endpoint; mcp: a paid MCP tool'),
  sellerId: z
    .string()
    .regex(/^sel_[0-9A-HJKMNP-TV-Z]{26}$/)
    .optional(),
  minPrice: amount.optional().describe('Lowest price, in units of the asset'),
  maxPrice: amount.optional().describe('Highest price, in units of the asset'),
  extension: z.enum(['bazaar', 'mcp']).optional(),
  minUptime: z
    .number()
    .min(0)
    .max(1)
    .optional()
    .describe('Only resources whose measured 7-day uptime (trust.uptime7d) is at least this share'),
  verifiedOnly: z
    .boolean()
    .optional()
    .describe("Only resources whose live 402 pays the listed payTo on the seller's verified domain"),
  liveOnly: z
    .boolean()
    .optional()
    .describe('Only resources whose last liveness probes answered a valid payment requirement'),
  limit: z.number().int().min(1).max(100).optional().describe('Most resources to return (default 20)'),
  cursor: z.string().min(1).max(512).optional().describe('nextCursor of the previous page'),
};

const callInput = {
  resourceId: resourceId.describe('The resource to call (from search_resources)'),
  arguments: z.record(z.string().max(128), z.unknown()).optional().describe('mcp resources: the tool arguments'),
  pathParams: z
    .record(z.string().max(64), z.string().max(256))
    .optional()
    .describe('http resources: values of the {placeholders} of the URL'),
  query: z
    .record(z.string().max(64), z.string().max(1024))
    .optional()
    .describe('http resources: query string parameters'),
  method: z
    .enum(['GET', 'POST'])
    .optional()
    .describe('http resources: the method (default GET; POST sends `body` as JSON)'),
  body: z.unknown().optional().describe('http resources: the JSON body of a POST'),
  maxAmount: amount
    .optional()
    .describe('Most this call may pay; it can lower, never raise, the configured per-call budget'),
};

/** The instructions of a server with these options: what it offers and how paying works there. */
export function marketplaceInstructions(options: Pick<MarketplaceMcpOptions, 'payer' | 'forwardPayments'>): string {
  if (options.payer)
    return (
      `${MARKETPLACE_INSTRUCTIONS_READ} call_paid_resource calls a resource and pays from this server's wallet ` +
      `within its budget (BUDGET_EXCEEDED before anything is signed; it pays only the terms inspect_resource ` +
      `shows); get_budget tells what is left. Errors are tool results with structuredContent.error = { code, ` +
      `message }.`
    );
  if (options.forwardPayments)
    return (
      `${MARKETPLACE_INSTRUCTIONS_READ} call_paid_resource is paid by YOUR wallet with the x402 MCP transport ` +
      `(specs/transports-v2/mcp.md): the first call answers isError with the seller's PaymentRequired ` +
      `(x402Version, accepts) in structuredContent; sign one of accepts (an exact Stellar authorization) and call ` +
      `again with the same arguments and the payment in params._meta["x402/payment"]; the answer carries the ` +
      `seller's result and _meta["x402/payment-response"] (the settlement). This server never holds your key, and ` +
      `holds no budget: ${CLIENT_BUDGET} Errors are tool results with structuredContent.error = { code, message ` +
      `}.`
    );
  return MARKETPLACE_INSTRUCTIONS_READ;
}

/** The tool an mcp resource names (`extensions.mcp.toolName`, or `tool`); INVALID_REQUEST when it names none. */
function mcpToolNameOf(detail: Schemas['ResourceDetail']): string {
  const ext = (detail.extensions ?? {}) as { mcp?: { toolName?: unknown; tool?: unknown } };
  const name = [ext.mcp?.toolName, ext.mcp?.tool].find((v): v is string => typeof v === 'string');
  if (!name) throw new ToolError('INVALID_REQUEST', `Resource ${detail.id} names no MCP tool`);
  return name;
}

export function createMarketplaceMcpServer(options: MarketplaceMcpOptions): McpServer {
  const port = marketplacePortOf(options.marketplace);
  const server = new McpServer(
    { name: options.name ?? 'paid-api-marketplace', version: options.version ?? '0.1.0' },
    { capabilities: { tools: {} }, instructions: marketplaceInstructions(options) },
  );
  const metrics = options.metrics;
  // Registered through a plainly typed view of registerTool: the SDK's generic signature (zod 3/4 compatible shape
  // inference) is costly for the compiler and adds nothing here, where the SDK validates the arguments at run time
  // against these schemas and each tool body states the type it reads.
  const register = server.registerTool.bind(server) as unknown as (
    name: MarketplaceToolName,
    config: {
      title: string;
      description: string;
      inputSchema?: Record<string, z.ZodTypeAny>;
      outputSchema: z.ZodTypeAny;
      annotations: ToolAnnotations;
    },
    callback: (args: never, extra: { _meta?: Record<string, unknown> }) => Promise<CallToolResult>,
  ) => void;
  const sellerFetch = options.fetch ?? globalThis.fetch;
  // The payer's limits: given, else its own budget's (so get_budget and the maxAmount cap hold wherever it is built).
  const perCallLimit = options.perCallLimit ?? options.payer?.budget?.limits?.perCall ?? undefined;
  const totalLimit = options.totalLimit ?? options.payer?.budget?.limits?.total ?? undefined;

  /** Runs one tool body: structured answer or a coded error; one metrics event either way. */
  function tool<A>(
    name: MarketplaceToolName,
    networkOf: (args: A) => unknown,
    body: (args: A, note: { network?: string }) => Promise<Record<string, unknown>>,
  ) {
    return async (args: A): Promise<CallToolResult> => {
      const started = process.hrtime.bigint();
      const note: { network?: string } = {};
      let code: string | null = null;
      try {
        const data = await body(args, note);
        return { structuredContent: data, content: [{ type: 'text', text: JSON.stringify(data) }] };
      } catch (err) {
        const error = toToolError(err);
        code = error.code;
        if (err instanceof BudgetExceededError)
          metrics?.budgetRejection({ network: safeNetwork(note.network), limit: err.limit });
        return errorResult(error);
      } finally {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        metrics?.toolCall({ tool: name, network: safeNetwork(note.network ?? networkOf(args)), code, seconds });
      }
    };
  }

  register(
    'search_resources',
    {
      title: 'Search paid resources',
      description:
        'Find paid HTTP endpoints and paid MCP tools in the marketplace. With `q`, results are ranked for the ' +
        'text; without it, the newest first. Every result shows its price (amount, asset), network, payTo and ' +
        'type, and a `trust` block the marketplace measured (live, uptime7d, latency, ownerVerified, ' +
        'priceDrift, payoutChanged, payers30d...); use inspect_resource for the full terms.',
      inputSchema: searchInput,
      outputSchema: page,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    tool(
      'search_resources',
      (a: { network?: string }) => a.network,
      async (args) => {
        const { q, ...filters } = args as DiscoveryFilters & { q?: string };
        const page = q ? await port.search({ q, ...filters }) : await port.list(filters);
        return page as unknown as Record<string, unknown>;
      },
    ),
  );

  /** A read of one marketplace record by id (no payment, nothing outside the marketplace): its network noted. */
  function registerRecordRead<K extends string>(
    name: MarketplaceToolName,
    config: { title: string; description: string; outputSchema: z.ZodTypeAny },
    idField: { [key in K]: z.ZodTypeAny },
    read: (id: string) => Promise<{ network?: string }>,
  ): void {
    register(
      name,
      { ...config, inputSchema: idField, annotations: { readOnlyHint: true, openWorldHint: false } },
      tool(
        name,
        () => undefined,
        async (args: Record<K, string>, note) => {
          const record = await read(args[Object.keys(idField)[0] as K]);
          note.network = record.network;
          return record as unknown as Record<string, unknown>;
        },
      ),
    );
  }

  registerRecordRead(
    'inspect_resource',
    {
      title: 'Inspect a paid resource',
      description:
        'The full record of one resource: its current payment requirements, input and output schemas, seller ' +
        'trust (domain verification), conformance state where known and settlement statistics.',
      outputSchema: resourceOut,
    },
    { resourceId },
    (id) => port.getResource(id),
  );

  register(
    'list_supported_networks',
    {
      title: 'Supported networks',
      description:
        'The ledger networks of the marketplace, their accepted assets and evidence label, and the payment ' +
        'schemes its facilitator verifies and settles.',
      outputSchema: networksOut,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    tool(
      'list_supported_networks',
      () => undefined,
      async () => {
        const [networks, supported] = await Promise.all([port.listNetworks(), port.supported()]);
        return { networks: networks.items, supported };
      },
    ),
  );

  registerRecordRead(
    'get_receipt',
    {
      title: 'Read a receipt',
      description:
        'A receipt: the evidence of a paid call (resource, seller, amount, asset, transaction hash, ledger, ' +
        'status, evidence label).',
      outputSchema: receiptOut,
    },
    { receiptId },
    (id) => port.getReceipt(id),
  );

  const payer = options.payer;
  if (payer) {
    register(
      'call_paid_resource',
      {
        title: 'Call and pay for a resource',
        description:
          'Calls a paid resource and pays its price from the configured wallet, within the configured budget ' +
          '(per call and in total; BUDGET_EXCEEDED before anything is signed). Pays only the terms ' +
          'inspect_resource shows: a higher live price or another recipient, asset or network is refused ' +
          'before signing (TERMS_CHANGED). http resources: fill `pathParams` for the {placeholders}; mcp ' +
          'resources: pass the tool `arguments`. Answers with the result, what was actually paid (`amount`), ' +
          'the settlement, the receipt and the budget.',
        inputSchema: callInput,
        outputSchema: callOut,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      },
      tool(
        'call_paid_resource',
        () => undefined,
        async (args: CallArgs, note) => {
          const detail = await port.getResource(args.resourceId);
          note.network = detail.network;
          if (detail.status !== 'active')
            throw new ToolError('RESOURCE_NOT_FOUND', `Resource ${detail.id} is not active`);
          const outcome = detail.type === 'mcp' ? await callMcp(detail, args) : await callHttp(detail, args);
          let receipt: Record<string, unknown> | null = null;
          const receiptId = outcome.receipt?.receiptId;
          if (typeof receiptId === 'string')
            receipt = (await port.getReceipt(receiptId).catch(() => null)) as Record<string, unknown> | null;
          return {
            resourceId: detail.id,
            type: detail.type,
            paid: outcome.paid,
            // What was actually paid (the live requirement signed), not the catalog's price.
            amount: outcome.amount ?? '0',
            settlement: outcome.receipt,
            receipt,
            spent: payer.spent,
            ...(payer.budget
              ? {
                  budget: {
                    committed: payer.budget.committed,
                    spent: payer.budget.spent,
                    released: payer.budget.released,
                  },
                }
              : {}),
            result: outcome.result,
          };
        },
      ),
    );
  }

  if (payer) {
    register(
      'get_budget',
      {
        title: 'Remaining budget',
        description:
          "What this agent's wallet may still pay: the per-call limit, the total, what is committed (signed, " +
          'not settled yet), spent, released, and remaining (total - committed - spent). Amounts in units of ' +
          'the asset.',
        outputSchema: budgetOut,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      tool(
        'get_budget',
        () => undefined,
        async () => {
          const b = payer.budget;
          const committed = b?.committed ?? '0.0000000';
          const spent = b?.spent ?? payer.spent;
          const total = totalLimit ?? null;
          const left = total === null ? null : toStroops(total) - toStroops(committed) - toStroops(spent);
          return {
            perCall: perCallLimit === undefined ? null : fromStroops(toStroops(perCallLimit)),
            total: total === null ? null : fromStroops(toStroops(total)),
            committed,
            spent,
            released: b?.released ?? '0.0000000',
            remaining: left === null ? null : fromStroops(left > 0n ? left : 0n),
            heldBy: 'server',
          };
        },
      ),
    );
  }

  interface CallArgs {
    resourceId: string;
    arguments?: Record<string, unknown>;
    pathParams?: Record<string, string>;
    query?: Record<string, string>;
    method?: 'GET' | 'POST';
    body?: unknown;
    maxAmount?: string;
  }
  /** The agent's maxAmount, never above the configured per-call budget. */
  const maxAmountOf = (args: CallArgs): string | undefined => {
    const cap = perCallLimit;
    if (cap === undefined || args.maxAmount === undefined) return args.maxAmount;
    return toStroops(args.maxAmount) < toStroops(cap) ? args.maxAmount : cap;
  };
  type Outcome = {
    paid: boolean;
    amount: string | null;
    receipt: Record<string, unknown> | null;
    result: Record<string, unknown>;
  };

  const guardedFetch = safeFetch(sellerFetch, {
    allowPrivateNetworks: options.allowPrivateNetworks ?? false,
    localDevDomains: options.localDevDomains ?? false,
    maxRedirects: 3,
    lookup: options.lookup,
  });

  /** The terms inspect_resource showed: the live 402 may ask less, never more, nor pay anyone or anything else. */
  function inspectedTerms(detail: Schemas['ResourceDetail']): ExpectedTerms {
    const r = detail.paymentRequirements;
    const asset = r.asset.contractId ?? assetContractId(r.asset.code, r.asset.issuer, normalizeNetwork(r.network));
    return { network: r.network, payTo: r.payTo, asset, amount: r.amount };
  }

  /** Runs a paid call; a failure to reach the seller is UPSTREAM_ERROR with its cause (ADDRESS_NOT_ALLOWED when
   * refused). */
  async function upstream<T>(detail: Schemas['ResourceDetail'], run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      const blocked = causeChain(err).find((e) => e instanceof BlockedAddressError);
      if (blocked) throw new ToolError('ADDRESS_NOT_ALLOWED', blocked.message);
      if (
        err instanceof ToolError ||
        err instanceof BudgetExceededError ||
        err instanceof PaymentFailedError ||
        err instanceof ApiError
      )
        throw err;
      if (err instanceof McpError)
        throw new ToolError(
          'UPSTREAM_ERROR',
          `The MCP server of resource ${detail.id} failed: ${err.message.slice(0, 300)}`,
        );
      if (err instanceof TypeError || (err as { cause?: unknown })?.cause) {
        const host = new URL(detail.url).host;
        const hint =
          isLocalDevHost(new URL(detail.url).hostname) && !options.localDevDomains
            ? ` (${host}: ${LOCAL_DEV_DOMAINS_OFF})`
            : '';
        throw new ToolError(
          'UPSTREAM_ERROR',
          `Could not reach the seller of resource ${detail.id} (${host}): ${describeCause(err)}${hint}`,
          { cause: describeCause(err) },
        );
      }
      throw err;
    }
  }

  async function callHttp(detail: Schemas['ResourceDetail'], args: CallArgs): Promise<Outcome> {
    const url = new URL(fillTemplate(detail.url, args.pathParams ?? {}));
    for (const [k, v] of Object.entries(args.query ?? {})) url.searchParams.set(k, v);
    const method = args.method ?? 'GET';
    const init: PayAndFetchInit = { method, maxAmount: maxAmountOf(args) };
    if (method === 'POST') {
      const text = JSON.stringify(args.body ?? {});
      if (text.length > MAX_BODY_CHARS) throw new ToolError('INVALID_REQUEST', 'body is too large');
      init.body = text;
      init.headers = { 'content-type': 'application/json' };
    }
    init.fetch = guardedFetch;
    init.expect = inspectedTerms(detail);
    const { response, paid, receipt, requirements } = await upstream(detail, () =>
      payer!.payAndFetch(url.toString(), init),
    );
    const contentType = response.headers.get('content-type') ?? '';
    const { text, truncated } = await readBounded(response, MAX_BODY_BYTES);
    let body: unknown = text;
    if (/json/i.test(contentType) && !truncated) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    if (!response.ok)
      throw new ToolError('UPSTREAM_ERROR', `The resource answered HTTP ${response.status}`, {
        status: response.status,
        paid,
      });
    return {
      paid,
      amount: paid ? (requirements?.amount ?? null) : null,
      receipt: receipt as Record<string, unknown> | null,
      result: { status: response.status, contentType, body, truncated },
    };
  }

  async function callMcp(detail: Schemas['ResourceDetail'], args: CallArgs): Promise<Outcome> {
    const toolName = mcpToolNameOf(detail);
    const client = new Client({ name: 'paid-api-marketplace-mcp', version: '0.1.0' });
    const transport = new StreamableHTTPClientTransport(new URL(detail.url), { fetch: guardedFetch });
    try {
      await client.connect(transport);
    } catch (err) {
      const blocked = causeChain(err).find((e) => e instanceof BlockedAddressError);
      if (blocked) throw new ToolError('ADDRESS_NOT_ALLOWED', blocked.message);
      throw new ToolError(
        'UPSTREAM_ERROR',
        `Could not connect to the MCP server of resource ${detail.id}: ${describeCause(err)}`,
        { cause: describeCause(err) },
      );
    }
    try {
      const { result, paid, receipt, requirements } = await upstream(detail, () =>
        payer!.payAndCallTool(client, toolName, args.arguments ?? {}, {
          maxAmount: maxAmountOf(args),
          expect: inspectedTerms(detail),
        }),
      );
      if (result.isError)
        throw new ToolError('UPSTREAM_ERROR', `Tool ${toolName} answered an error (not charged)`, {
          paid,
          content: result.content as unknown,
        });
      return {
        paid,
        amount: paid ? (requirements?.amount ?? null) : null,
        receipt: receipt as Record<string, unknown> | null,
        result: {
          content: result.content,
          ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
        },
      };
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  /**
   * The remote `call_paid_resource` (options.forwardPayments): the x402 MCP transport binding, the agent's own wallet.
   * Without `_meta["x402/payment"]` the seller's 402 comes back as a tool error whose structuredContent is its
   * PaymentRequired; with it, the payment goes to the seller as PAYMENT-SIGNATURE (an mcp resource: as the same
   * `_meta` on the seller's tool call) and the seller's answer comes back with `_meta["x402/payment-response"]`.
   */
  function registerForwardingCall(): void {
    register(
      'call_paid_resource',
      {
        title: 'Call a paid resource, paid by your wallet (x402 MCP)',
        description:
          'Calls a paid resource; YOUR wallet pays, by the x402 MCP transport. First call: the answer is ' +
          "isError with the seller's PaymentRequired in structuredContent (x402Version, accepts: amount in " +
          'atomic units, asset contract, payTo, network). Sign one of accepts (exact scheme on Stellar) and ' +
          'call again with the same arguments and the payment payload in params._meta["x402/payment"]. The ' +
          'answer carries the result and _meta["x402/payment-response"] (transaction, receipt). http ' +
          'resources: fill `pathParams` for the {placeholders}; mcp resources: pass the tool `arguments`. This ' +
          'server never holds your key.',
        inputSchema: callInput,
        outputSchema: callOut,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      },
      async (args: CallArgs, extra: { _meta?: Record<string, unknown> }): Promise<CallToolResult> => {
        const started = process.hrtime.bigint();
        let network: string | undefined;
        let code: string | null = null;
        try {
          const detail = await port.getResource(args.resourceId);
          network = detail.network;
          if (detail.status !== 'active')
            throw new ToolError('RESOURCE_NOT_FOUND', `Resource ${detail.id} is not active`);
          const payment = extra._meta?.[X402_PAYMENT_META];
          if (payment !== undefined && (typeof payment !== 'object' || payment === null || Array.isArray(payment)))
            throw new ToolError(
              'INVALID_PAYMENT_PAYLOAD',
              `_meta["${X402_PAYMENT_META}"] must be an x402 PaymentPayload object`,
            );
          const out =
            detail.type === 'mcp'
              ? await forwardMcp(detail, args, payment as Record<string, unknown> | undefined)
              : await forwardHttp(detail, args, payment as Record<string, unknown> | undefined);
          if (out.isError) code = 'PAYMENT_REQUIRED';
          return out;
        } catch (err) {
          const error = toToolError(err);
          code = error.code;
          return errorResult(error);
        } finally {
          metrics?.toolCall({
            tool: 'call_paid_resource',
            network: safeNetwork(network),
            code,
            seconds: Number(process.hrtime.bigint() - started) / 1e9,
          });
        }
      },
    );
  }

  /**
   * get_budget on the remote form (decided, issue 32): the server holds no wallet and no budget, the agent's own
   * client signs and so keeps the limits. The tool exists so an agent that looks for its budget is told where it
   * lives instead of finding nothing; it answers (not an error) with null limits and `heldBy: "client"`.
   */
  function registerClientBudget(): void {
    register(
      'get_budget',
      {
        title: 'Where your budget lives',
        description: `This server holds no wallet and no budget: ${CLIENT_BUDGET}`,
        outputSchema: budgetOut,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      tool(
        'get_budget',
        () => undefined,
        async () => ({
          perCall: null,
          total: null,
          remaining: null,
          heldBy: 'client',
          message: `This server holds no wallet and no budget: ${CLIENT_BUDGET}`,
        }),
      ),
    );
  }

  async function forwardHttp(
    detail: Schemas['ResourceDetail'],
    args: CallArgs,
    payment: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    const url = new URL(fillTemplate(detail.url, args.pathParams ?? {}));
    for (const [k, v] of Object.entries(args.query ?? {})) url.searchParams.set(k, v);
    const method = args.method ?? 'GET';
    const headers: Record<string, string> = { accept: 'application/json' };
    let body: string | undefined;
    if (method === 'POST') {
      body = JSON.stringify(args.body ?? {});
      if (body.length > MAX_BODY_CHARS) throw new ToolError('INVALID_REQUEST', 'body is too large');
      headers['content-type'] = 'application/json';
    }
    if (payment) headers['payment-signature'] = Buffer.from(JSON.stringify(payment), 'utf8').toString('base64');
    const response = await upstream(detail, () => guardedFetch(url.toString(), { method, headers, body }));
    const { text, truncated } = await readBounded(response, MAX_BODY_BYTES);
    if (response.status === 402) {
      const required = decodeHeaderJson(response.headers.get('payment-required')) ?? parseJson(text);
      if (!required || typeof required !== 'object' || !Array.isArray((required as { accepts?: unknown }).accepts))
        throw new ToolError(
          'UPSTREAM_ERROR',
          `The seller of resource ${detail.id} answered 402 without an x402 PaymentRequired`,
        );
      const doc = { ...(required as Record<string, unknown>), resourceId: detail.id };
      return { isError: true, structuredContent: doc, content: [{ type: 'text', text: JSON.stringify(doc) }] };
    }
    const contentType = response.headers.get('content-type') ?? '';
    const parsed = /json/i.test(contentType) && !truncated ? (parseJson(text) ?? text) : text;
    const settlement = decodeHeaderJson(response.headers.get('payment-response')) as Record<string, unknown> | null;
    if (!response.ok)
      throw new ToolError('UPSTREAM_ERROR', `The resource answered HTTP ${response.status}`, {
        status: response.status,
        paid: false,
        body: parsed,
      });
    const data = {
      resourceId: detail.id,
      type: detail.type,
      paid: settlement !== null,
      settlement,
      result: { status: response.status, contentType, body: parsed, truncated },
    };
    return {
      structuredContent: data,
      content: [{ type: 'text', text: JSON.stringify(data) }],
      ...(settlement ? { _meta: { [X402_PAYMENT_RESPONSE_META]: settlement } } : {}),
    };
  }

  async function forwardMcp(
    detail: Schemas['ResourceDetail'],
    args: CallArgs,
    payment: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    const toolName = mcpToolNameOf(detail);
    const client = new Client({ name: 'paid-api-marketplace', version: '0.1.0' });
    const transport = new StreamableHTTPClientTransport(new URL(detail.url), { fetch: guardedFetch });
    let answer: CallToolResult;
    try {
      await upstream(detail, () => client.connect(transport));
      const params = {
        name: toolName,
        arguments: args.arguments ?? {},
        ...(payment ? { _meta: { [X402_PAYMENT_META]: payment } } : {}),
      };
      answer = (await upstream(detail, () =>
        client.request({ method: 'tools/call', params }, CallToolResultSchema),
      )) as CallToolResult;
    } finally {
      await client.close().catch(() => undefined);
    }
    // The seller's PaymentRequired (first call, or a refused payment) goes back as it is, plus the resource id.
    const required = paymentRequiredOf(answer);
    if (required) {
      const doc = { ...required, resourceId: detail.id };
      return { isError: true, structuredContent: doc, content: [{ type: 'text', text: JSON.stringify(doc) }] };
    }
    if (answer.isError) {
      // A coded answer of the seller's paywall (SETTLEMENT_UNCONFIRMED: the payment may still settle) keeps its code.
      const coded = (
        answer.structuredContent as
          { error?: { code?: unknown; message?: unknown; paymentAttemptId?: unknown } } | undefined
      )?.error;
      if (coded && typeof coded.code === 'string' && /^[A-Z][A-Z0-9_]{1,47}$/.test(coded.code))
        throw new ToolError(
          coded.code,
          String(coded.message ?? '').slice(0, 500),
          typeof coded.paymentAttemptId === 'string' ? { paymentAttemptId: coded.paymentAttemptId } : undefined,
        );
      throw new ToolError('UPSTREAM_ERROR', `Tool ${toolName} answered an error (not charged)`, {
        paid: false,
        content: answer.content as unknown,
      });
    }
    // The seller's result in the same envelope as an http resource's; its settlement also in _meta, as x402 MCP says.
    const settlement = (answer._meta?.[X402_PAYMENT_RESPONSE_META] ?? null) as Record<string, unknown> | null;
    const data = {
      resourceId: detail.id,
      type: detail.type,
      paid: settlement !== null && settlement.success !== false,
      settlement,
      result: {
        content: answer.content,
        ...(answer.structuredContent ? { structuredContent: answer.structuredContent } : {}),
      },
    };
    return {
      structuredContent: data,
      content: [{ type: 'text', text: JSON.stringify(data) }],
      ...(settlement ? { _meta: { [X402_PAYMENT_RESPONSE_META]: settlement } } : {}),
    };
  }

  if (!payer && options.forwardPayments) {
    registerForwardingCall();
    registerClientBudget();
  }
  return server;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A base64 JSON header (PAYMENT-REQUIRED, PAYMENT-RESPONSE), or null. */
function decodeHeaderJson(value: string | null): unknown {
  if (!value || value.length > 65_536) return null;
  return parseJson(Buffer.from(value, 'base64').toString('utf8'));
}

/** Reads at most `limit` bytes of a response body (then cancels the stream), so a huge answer cannot exhaust memory. */
async function readBounded(response: Response, limit: number): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: '', truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > limit) {
      chunks.push(value.subarray(0, limit - size));
      truncated = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated };
}

/** The error and its causes (fetch puts the network error in `cause`). */
function causeChain(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e: unknown = err; e && out.length < 5; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
}

/** A short description of a network failure: the innermost code (ENOTFOUND, ECONNREFUSED, ...) and message. */
function describeCause(err: unknown): string {
  const chain = causeChain(err);
  const inner = chain[chain.length - 1] as { code?: unknown; message?: unknown } | undefined;
  const code = typeof inner?.code === 'string' ? `${inner.code}: ` : '';
  return `${code}${String(inner?.message ?? err)}`.slice(0, 300);
}

function fillTemplate(template: string, values: Record<string, string>): string {
  const missing: string[] = [];
  const url = template.replace(/\{([^}]{1,64})\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) {
      missing.push(name);
      return '';
    }
    return encodeURIComponent(v);
  });
  if (missing.length)
    throw new ToolError('INVALID_REQUEST', `pathParams is missing ${missing.join(', ')}`, { missing });
  return url;
}

/** A tool's failed answer: the error as structured content and as its JSON text. */
function errorResult(error: ToolError) {
  const payload = {
    error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
  };
  return {
    isError: true as const,
    structuredContent: payload,
    content: [{ type: 'text' as const, text: JSON.stringify(payload) }],
  };
}

/** A failure as a tool error whose code is one of MCP_TOOL_ERROR_CODES. */
export function toToolError(err: unknown): ToolError {
  const error = codedToolError(err);
  if (DOCUMENTED_CODES.has(error.code)) return error;
  const fallback = err instanceof PaymentFailedError ? 'PAYMENT_REJECTED' : 'UPSTREAM_ERROR';
  return new ToolError(fallback, error.message, { ...(error.details ?? {}), reportedCode: safeCode(error.code) });
}

function codedToolError(err: unknown): ToolError {
  if (err instanceof ToolError) return err;
  if (err instanceof BudgetExceededError)
    return new ToolError('BUDGET_EXCEEDED', err.message, {
      requested: err.requested,
      remaining: err.remaining,
      limit: err.limit,
    });
  if (err instanceof PaymentFailedError) return new ToolError(safeCode(err.code), err.message.slice(0, 500));
  const coded = err as { code?: unknown; message?: unknown; status?: unknown };
  if (err instanceof Error && typeof coded.code === 'string' && /^[A-Z][A-Z0-9_]{1,47}$/.test(coded.code)) {
    // An ApiError of the marketplace (or a DomainError on the service): codes and messages are the API's own.
    return new ToolError(coded.code, String(coded.message).slice(0, 500));
  }
  return new ToolError('INTERNAL_ERROR', 'The tool failed unexpectedly');
}
