/**
 * The buyer SDK: discovery, resource reads, settlements and receipts over the marketplace API, typed from the
 * buyer bundle of the spec (src/generated, never edited by hand), plus paying for x402 resources on Stellar.
 *
 * Every call goes through one transport (src/core): the API key, an Idempotency-Key on every POST, retries of
 * safe failures with jittered backoff, and one ApiError for every error answer.
 */
import type { Client } from 'openapi-fetch';
import { Keypair } from '@stellar/stellar-sdk';
import type { components, paths } from './generated/openapi.js';
import { createTransport, type RetryOptions } from './core/http.js';
import { data, discoveryReads, ledgerRecordReads, resourceReads, sellerReads } from './core/reads.js';
import { Budget, type BudgetOptions } from './payments/budget.js';
import {
  createPayAndFetch,
  type PayAndFetchInit,
  type PaidFetchResult,
  type ResourceLike,
} from './payments/pay-and-fetch.js';
import {
  signPayment,
  type PaymentPayload,
  type PaymentSigner,
  type SignPaymentOptions,
} from './payments/sign-payment.js';
import { fromResourceRequirements, readPaymentRequired } from './payments/requirements.js';
import { verifyReceiptOnLedger, type LedgerCheck, type ReceiptClaims } from './payments/receipt-on-ledger.js';
import { attestationClaims } from './receipts/attestation.js';
import { createLedgerReader, latestLedgerOf } from './core/soroban-rpc.js';
import { createPayAndCallTool, type PayAndCallToolOptions, type PaidToolCallResult } from './mcp/pay-and-call-tool.js';
import type { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';

export * from './core/public.js';
export {
  Budget,
  BudgetExceededError,
  FileBudgetStore,
  type BudgetOptions,
  type BudgetStore,
  type BudgetTotals,
  type Commitment,
} from './payments/budget.js';
export { AssetMismatchError, assertAssetShown } from './payments/requirements.js';
export { createLedgerReader } from './core/soroban-rpc.js';
export { type TransferEvent } from './payments/ledger-reads.js';
export {
  PaymentFailedError,
  type ExpectedTerms,
  type PaidFetchResult,
  type PayAndFetchInit,
  type PaymentReceiptHeader,
  type ResourceLike,
} from './payments/pay-and-fetch.js';
export {
  signPayment,
  transferAuthorizationEntry,
  DEFAULT_VALID_FOR_LEDGERS,
  type PaymentPayload,
  type PaymentSigner,
  type SignPaymentOptions,
} from './payments/sign-payment.js';
export {
  readPaymentRequired,
  fromResourceRequirements,
  fromX402Requirement,
  type ListedRequirements,
  type NormalizedRequirements,
} from './payments/requirements.js';
export { verifyReceiptOnLedger, type LedgerCheck, type ReceiptClaims } from './payments/receipt-on-ledger.js';
export { toStroops, fromStroops } from './core/amounts.js';
export { latestLedgerOf } from './core/soroban-rpc.js';
export {
  payAndCallTool,
  paymentRequiredOf,
  paymentResponseOf,
  X402_PAYMENT_META,
  X402_PAYMENT_RESPONSE_META,
  type PayAndCallToolOptions,
  type PaidToolCallResult,
} from './mcp/pay-and-call-tool.js';
export {
  createMarketplaceMcpServer,
  MARKETPLACE_READ_TOOLS,
  MCP_TOOL_ERROR_CODES,
  type MarketplaceMcpOptions,
  type MarketplacePort,
} from './mcp/marketplace-server.js';
export { type McpMetricsSink } from './mcp/metrics.js';

type Schemas = components['schemas'];

export interface PaymentOptions {
  /** A Stellar Keypair (with secret), or `{ publicKey, sign }` where `sign` signs the authorization preimage (wallets).
   * */
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

/** The payment signer: a Keypair or wallet as is; a secret seed checked with a message that never repeats it. */
function toSigner(signer: PaymentSigner | string): PaymentSigner {
  if (typeof signer !== 'string') {
    const s = signer as unknown as { publicKey?: unknown; sign?: unknown } | null;
    if (
      !s ||
      typeof s !== 'object' ||
      (typeof s.publicKey !== 'string' && typeof s.publicKey !== 'function') ||
      typeof s.sign !== 'function'
    )
      throw new TypeError('payment.signer must be a Keypair, a secret seed (S...) or { publicKey, sign }');
    return signer;
  }
  try {
    return Keypair.fromSecret(signer.trim());
  } catch {
    throw new TypeError(
      'payment.signer is not a Stellar secret seed: expected 56 characters starting with "S" (the value is not shown)',
    );
  }
}

export function createBuyerClient(options: BuyerClientOptions) {
  const clientFetch = options.fetch ?? globalThis.fetch;
  const raw = createTransport<paths>({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    fetch: options.fetch,
    retry: options.retry,
  });

  const discovery = discoveryReads(raw);
  const resources = resourceReads(raw);
  const sellers = sellerReads(raw);
  /** The marketplace's keys (GET /.well-known/jwks.json): they verify its attestations (verifyAttestation). */
  const marketplaceKeys = async (): Promise<{ keys: Array<Record<string, unknown>> }> => {
    const res = await clientFetch(`${options.baseUrl.replace(/\/+$/, '')}/.well-known/jwks.json`);
    if (!res.ok) throw new Error(`GET /.well-known/jwks.json answered HTTP ${res.status}`);
    return (await res.json()) as { keys: Array<Record<string, unknown>> };
  };

  const records = ledgerRecordReads(raw);
  const { settlements, networks } = records;

  const receipts = {
    ...records.receipts,
    /**
     * Checks a receipt on the ledger itself (see verifyReceiptOnLedger): the transaction succeeded in the stated
     * ledger and its transfer event moved the receipt's amount of its asset from the payer to payTo. payTo is read
     * from the resource version the receipt names, the payer from its attestation (or `options.payer`).
     */
    verifyOnLedger: async (
      receiptOrId: string | ReceiptClaims | Schemas['Receipt'],
      options: string | { rpcUrl?: string; payer?: string; payTo?: string } = {},
    ): Promise<LedgerCheck> => {
      const o = typeof options === 'string' ? { rpcUrl: options } : options;
      const receipt = (
        typeof receiptOrId === 'string' ? await receipts.get(receiptOrId) : receiptOrId
      ) as ReceiptClaims & Partial<Schemas['Receipt']> & { attestation?: unknown };
      const attested = attestationClaims(receipt.attestation);
      const claims: ReceiptClaims = {
        ...receipt,
        payer: o.payer ?? receipt.payer ?? attested?.payer ?? null,
        payTo: o.payTo ?? receipt.payTo ?? attested?.payTo ?? null,
      };
      if (!claims.payTo && receipt.resourceId && receipt.versionId) {
        const versions = await resources
          .iterateVersions(receipt.resourceId)
          .toArray(200)
          .catch(() => []);
        claims.payTo = versions.find((v) => v.id === receipt.versionId)?.payTo ?? null;
      }
      const network = receipt.network ?? 'stellar:testnet';
      return verifyReceiptOnLedger(claims, o.rpcUrl ?? (await rpcUrlFor(network)), clientFetch);
    },
  };

  let networkList: Promise<Schemas['NetworkList']> | null = null;
  const cachedNetworks = () =>
    (networkList ??= networks.list().catch((err) => ((networkList = null), Promise.reject(err))));
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
  const signer: PaymentSigner | null = payment ? toSigner(payment.signer) : null;
  const budget = new Budget(payment?.budget);
  const ledger = createLedgerReader(rpcUrlFor, clientFetch);
  budget.ledger = ledger;
  const payerDeps = signer
    ? {
        signer,
        budget,
        ledger,
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
    marketplaceKeys,
    /** GET /v1/supported: what the facilitator accepts. */
    supported: (): Promise<Schemas['Supported']> => data(raw.GET('/v1/supported')),
    /**
     * Calls a paid resource; on 402 pays within the budget and calls again (see pay-and-fetch.ts). Needs
     * `payment` in the client options.
     */
    async payAndFetch(target: string | URL | ResourceLike, init?: PayAndFetchInit): Promise<PaidFetchResult> {
      if (!payer) throw new Error('payAndFetch needs the client option `payment` (signer, rpcUrl, budget)');
      return payer(target, init);
    },
    /**
     * Calls a paid MCP tool through a connected MCP `Client`; when it asks for payment (x402 MCP transport), pays
     * within the same budget and calls again (see mcp/pay-and-call-tool.ts). Needs `payment` in the client options.
     */
    async payAndCallTool(
      client: McpClient,
      name: string,
      args?: Record<string, unknown>,
      opts?: PayAndCallToolOptions,
    ): Promise<PaidToolCallResult> {
      if (!toolPayer) throw new Error('payAndCallTool needs the client option `payment` (signer, rpcUrl, budget)');
      return toolPayer(client, name, args, opts);
    },
    /** Signs a payment for a resource's `paymentRequirements` (or a 402's x402 requirement) without calling anything.
     * */
    async signPayment(
      requirements: NonNullable<ResourceLike['paymentRequirements']>,
      opts: Partial<SignPaymentOptions> = {},
    ): Promise<PaymentPayload> {
      const s = opts.signer ?? signer;
      if (!s) throw new Error('signPayment needs a signer (client option payment.signer or opts.signer)');
      const normalized = fromResourceRequirements(requirements);
      const latestLedger =
        opts.latestLedger ??
        (opts.rpcUrl ? await latestLedgerOf(opts.rpcUrl, clientFetch) : await ledger.latestLedger(normalized.network));
      return signPayment(normalized, {
        signer: s,
        latestLedger,
        validForLedgers: opts.validForLedgers ?? payment?.validForLedgers,
      });
    },
    /**
     * What this client's signatures commit (see payments/budget.ts): `budget.committed` (signed, not yet proven
     * spent or unusable), `budget.spent`, `budget.released`, `budget.totals()` per asset, `budget.reconcile()` asks
     * the ledger about open commitments.
     */
    budget,
    /** Decimal amount that counts against the budget: committed + spent (all assets). */
    get spent(): string {
      return budget.spentAmount;
    },
    /** The typed openapi-fetch client for anything else (errors still throw ApiError). */
    raw,
  };
}

export type BuyerClient = ReturnType<typeof createBuyerClient>;
export { readPaymentRequired as parsePaymentRequired };
