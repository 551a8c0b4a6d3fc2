/**
 * The buyer SDK: discovery, resource reads, settlements and receipts over the marketplace API, typed from the
 * buyer bundle of the spec (src/generated, never edited by hand), plus paying for x402 resources on Stellar.
 *
 * Every call goes through one transport (src/core): the API key, an Idempotency-Key on every POST, retries of
 * safe failures with jittered backoff, and one ApiError for every error answer.
 */
import type { Client } from 'openapi-fetch';
import { Keypair } from '@stellar/stellar-sdk';
import type { components, operations, paths } from './generated/openapi.js';
import { createTransport, type RetryOptions } from './core/http.js';
import { paginate, type PageIterable } from './core/pagination.js';
import { Budget, type BudgetOptions } from './payments/budget.js';
import { createPayAndFetch, type PayAndFetchInit, type PaidFetchResult, type ResourceLike } from './payments/pay-and-fetch.js';
import { signPayment, type PaymentPayload, type PaymentSigner, type SignPaymentOptions } from './payments/sign-payment.js';
import { fromResourceRequirements, readPaymentRequired } from './payments/requirements.js';
import { verifyReceiptOnLedger, type LedgerCheck } from './payments/verify-receipt.js';
import { createPayAndCallTool, type PayAndCallToolOptions, type PaidToolCallResult } from './mcp/pay-and-call-tool.js';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';

export type { paths, components, operations } from './generated/openapi.js';
export { ApiError, type ApiErrorDetail } from './core/errors.js';
export type { RetryOptions } from './core/http.js';
export type { PageIterable } from './core/pagination.js';
export { BudgetExceededError, type BudgetOptions } from './payments/budget.js';
export { PaymentFailedError, type PaidFetchResult, type PayAndFetchInit, type PaymentReceiptHeader, type ResourceLike } from './payments/pay-and-fetch.js';
export { signPayment, transferAuthorizationEntry, latestLedgerOf, DEFAULT_VALID_FOR_LEDGERS, type PaymentPayload, type PaymentSigner, type SignPaymentOptions } from './payments/sign-payment.js';
export { readPaymentRequired, fromResourceRequirements, fromX402Requirement, type NormalizedRequirements } from './payments/requirements.js';
export { verifyReceiptOnLedger, type LedgerCheck } from './payments/verify-receipt.js';
export { toStroops, fromStroops } from './payments/amounts.js';
export { payAndCallTool, paymentRequiredOf, paymentResponseOf, X402_PAYMENT_META, X402_PAYMENT_RESPONSE_META, type PayAndCallToolOptions, type PaidToolCallResult } from './mcp/pay-and-call-tool.js';
export { createMarketplaceMcpServer, MARKETPLACE_READ_TOOLS, type MarketplaceMcpOptions, type MarketplacePort } from './mcp/marketplace-server.js';
export { type McpMetricsSink } from './mcp/metrics.js';

type Schemas = components['schemas'];
type Query<Op extends keyof operations> = operations[Op]['parameters'] extends { query?: infer Q } ? NonNullable<Q> : never;
type NoCursor<Q> = Omit<Q, 'cursor'>;

export interface PaymentOptions {
  /** A Stellar Keypair (with secret), or `{ publicKey, sign }` where `sign` signs the authorization preimage (wallets). */
  signer: PaymentSigner | string;
  /** Soroban RPC URL per network (or one for all). Default: the `rpcUrl` the marketplace lists in GET /v1/networks. */
  rpcUrl?: string | Partial<Record<'stellar:testnet' | 'stellar:pubnet', string>>;
  /** Spending limits (decimal units of the asset). Without them the client pays whatever is asked. */
  budget?: BudgetOptions;
  /** How many ledgers an authorization stays valid. Default 60 (about 5 minutes). */
  validForLedgers?: number;
}

export interface BuyerClientOptions {
  /** The marketplace API, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /** Optional: buyers use the public operations without a key. */
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
  retry?: RetryOptions;
  /** Needed only for payAndFetch / signPayment. */
  payment?: PaymentOptions;
}

export type RawBuyerClient = Client<paths>;

/** Unwraps an openapi-fetch result: errors were already thrown as ApiError by the transport. */
async function data<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const r = await p;
  return r.data as T;
}

export function createBuyerClient(options: BuyerClientOptions) {
  const raw = createTransport<paths>({ baseUrl: options.baseUrl, apiKey: options.apiKey, fetch: options.fetch, retry: options.retry });

  const discovery = {
    /** One page of discoverable resources (newest first). */
    list: (query: Query<'listDiscoveryResources'> = {}): Promise<Schemas['DiscoveryPage']> => data(raw.GET('/v1/discovery/resources', { params: { query } })),
    /** One page of resources ranked for `q`. */
    search: (query: Query<'searchResources'>): Promise<Schemas['SearchPage']> => data(raw.GET('/v1/discovery/search', { params: { query } })),
    /** Every discoverable resource matching the filters, page by page: `for await (const r of buyer.discovery.iterate({...}))`. */
    iterate: (query: NoCursor<Query<'listDiscoveryResources'>> = {}): PageIterable<Schemas['DiscoveryResource']> =>
      paginate((cursor) => discovery.list({ ...query, cursor })),
    /** Every search result, in rank order, page by page. */
    iterateSearch: (query: NoCursor<Query<'searchResources'>>): PageIterable<Schemas['DiscoveryResource']> =>
      paginate((cursor) => discovery.search({ ...query, cursor })),
  };

  const resources = {
    get: (id: string): Promise<Schemas['ResourceDetail']> => data(raw.GET('/v1/resources/{id}', { params: { path: { id } } })),
    list: (query: Query<'listResources'> = {}): Promise<Schemas['ResourceList']> => data(raw.GET('/v1/resources', { params: { query } })),
    iterate: (query: NoCursor<Query<'listResources'>> = {}): PageIterable<Schemas['Resource']> => paginate((cursor) => resources.list({ ...query, cursor })),
    versions: (id: string, query: Query<'listResourceVersions'> = {}): Promise<Schemas['ResourceVersionList']> =>
      data(raw.GET('/v1/resources/{id}/versions', { params: { path: { id }, query } })),
    iterateVersions: (id: string, query: NoCursor<Query<'listResourceVersions'>> = {}): PageIterable<Schemas['ResourceVersion']> =>
      paginate((cursor) => resources.versions(id, { ...query, cursor })),
  };

  const sellers = {
    get: (sellerId: string): Promise<Schemas['Seller']> => data(raw.GET('/v1/sellers/{sellerId}', { params: { path: { sellerId } } })),
    resources: (sellerId: string, query: Query<'listSellerResources'> = {}): Promise<Schemas['ResourceList']> =>
      data(raw.GET('/v1/sellers/{sellerId}/resources', { params: { path: { sellerId }, query } })),
    iterateResources: (sellerId: string, query: NoCursor<Query<'listSellerResources'>> = {}): PageIterable<Schemas['Resource']> =>
      paginate((cursor) => sellers.resources(sellerId, { ...query, cursor })),
  };

  const settlements = {
    get: (transactionHash: string): Promise<Schemas['Settlement']> => data(raw.GET('/v1/settlements/{transactionHash}', { params: { path: { transactionHash } } })),
  };

  const receipts = {
    get: (receiptId: string): Promise<Schemas['Receipt']> => data(raw.GET('/v1/receipts/{receiptId}', { params: { path: { receiptId } } })),
    /** Reads the receipt, then checks its transaction on the ledger itself (see verifyReceiptOnLedger). */
    verifyOnLedger: async (receiptOrId: string | { transactionHash: string; ledger?: number | null; network?: string }, rpcUrl?: string): Promise<LedgerCheck> => {
      const receipt = typeof receiptOrId === 'string' ? await receipts.get(receiptOrId) : receiptOrId;
      return verifyReceiptOnLedger(receipt, rpcUrl ?? (await rpcUrlFor(receipt.network ?? 'stellar:testnet')));
    },
  };

  const networks = {
    list: (): Promise<Schemas['NetworkList']> => data(raw.GET('/v1/networks')),
  };

  let networkList: Promise<Schemas['NetworkList']> | null = null;
  const cachedNetworks = () => (networkList ??= networks.list().catch((err) => ((networkList = null), Promise.reject(err))));
  async function rpcUrlFor(network: string): Promise<string> {
    const configured = options.payment?.rpcUrl;
    if (typeof configured === 'string') return configured;
    const perNetwork = configured?.[network as 'stellar:testnet'];
    if (perNetwork) return perNetwork;
    const listed = (await cachedNetworks()).items.find((n) => n.network === network)?.rpcUrl;
    if (!listed) throw new Error(`No Soroban RPC URL for ${network}: set payment.rpcUrl`);
    return listed;
  }

  const payment = options.payment;
  const signer: PaymentSigner | null = payment ? (typeof payment.signer === 'string' ? Keypair.fromSecret(payment.signer) : payment.signer) : null;
  const budget = new Budget(payment?.budget);
  const payerDeps = signer
    ? {
        signer,
        budget,
        fetch: options.fetch ?? globalThis.fetch,
        rpcUrlFor,
        validForLedgers: payment?.validForLedgers,
        async resolveAsset(network: string, contractId: string) {
          const n = (await cachedNetworks()).items.find((x) => x.network === network);
          const a = n?.assets.find((x) => x.contractId === contractId);
          return a ? { code: a.code, issuer: a.issuer } : null;
        },
      }
    : null;
  const payer = payerDeps ? createPayAndFetch(payerDeps) : null;
  const toolPayer = payerDeps ? createPayAndCallTool(payerDeps) : null;

  return {
    discovery,
    resources,
    sellers,
    settlements,
    receipts,
    networks,
    /** GET /v1/supported: what the facilitator accepts. */
    supported: (): Promise<Schemas['Supported']> => data(raw.GET('/v1/supported')),
    /**
     * Calls a paid resource; on 402 pays within the budget and calls again (see pay-and-fetch.ts). Needs
     * `payment` in the client options.
     */
    payAndFetch(target: string | URL | ResourceLike, init?: PayAndFetchInit): Promise<PaidFetchResult> {
      if (!payer) throw new Error('payAndFetch needs the client option `payment` (signer, rpcUrl, budget)');
      return payer(target, init);
    },
    /**
     * Calls a paid MCP tool through a connected MCP `Client`; when it asks for payment (x402 MCP transport), pays
     * within the same budget and calls again (see mcp/pay-and-call-tool.ts). Needs `payment` in the client options.
     */
    payAndCallTool(client: McpClient, name: string, args?: Record<string, unknown>, opts?: PayAndCallToolOptions): Promise<PaidToolCallResult> {
      if (!toolPayer) throw new Error('payAndCallTool needs the client option `payment` (signer, rpcUrl, budget)');
      return toolPayer(client, name, args, opts);
    },
    /** Signs a payment for a resource's `paymentRequirements` (or a 402's x402 requirement) without calling anything. */
    async signPayment(requirements: NonNullable<ResourceLike['paymentRequirements']>, opts: Partial<SignPaymentOptions> = {}): Promise<PaymentPayload> {
      const s = opts.signer ?? signer;
      if (!s) throw new Error('signPayment needs a signer (client option payment.signer or opts.signer)');
      const normalized = fromResourceRequirements(requirements);
      return signPayment(normalized, { signer: s, rpcUrl: opts.rpcUrl ?? (opts.latestLedger ? undefined : await rpcUrlFor(normalized.network)), latestLedger: opts.latestLedger, validForLedgers: opts.validForLedgers ?? payment?.validForLedgers });
    },
    /** Decimal amount this client has paid (or reserved for an in-flight payment). */
    get spent(): string {
      return budget.spentAmount;
    },
    /** The typed openapi-fetch client for anything else (errors still throw ApiError). */
    raw,
  };
}

export type BuyerClient = ReturnType<typeof createBuyerClient>;
export { readPaymentRequired as parsePaymentRequired };
export { verifyReceiptSignature, type SignedReceiptPayload, type ReceiptVerification } from './receipts/verify-receipt.js';
