/**
 * The seller SDK: sellers, resources, domain verification, cataloging, payments, settlements and receipts over the
 * marketplace API, typed from the seller bundle of the spec (src/generated, never edited by hand), and `paywall`,
 * an Express middleware that charges for a route through the marketplace's x402 facilitator.
 *
 * Every call goes through one transport (src/core): the API key, an Idempotency-Key on every POST, retries of
 * safe failures with jittered backoff, and one ApiError for every error answer.
 */
import type { Client } from 'openapi-fetch';
import { Keypair, hash } from '@stellar/stellar-sdk';
import type { components, operations, paths } from './generated/openapi.js';
import { checkWalletReadiness, type WalletReadiness } from './wallet/readiness.js';
import { createTransport, type RetryOptions } from './core/http.js';
import { paginate, type PageIterable } from './core/pagination.js';
import {
  data,
  discoveryReads,
  ledgerRecordReads,
  resourceReads,
  sellerReads,
  type NoCursor,
  type Query,
} from './core/reads.js';
import { sellerKeys } from './keys.js';
import { receiptKeyProof, type ReceiptKey } from './paywall/receipt-signer.js';

export * from './core/public.js';
export {
  paywall,
  type PaywallOptions,
  type PaywallPayment,
  type PaywallClient,
  type PaywallMiddleware,
} from './paywall/paywall.js';
export { PaywallConfigurationError } from './paywall/seller-checks.js';
export { settleOutcome, type SettleOutcome, type SettleWait, type SettlingClient } from './paywall/settle-outcome.js';
export {
  createReceiptKey,
  createReceiptSigner,
  receiptKeyProof,
  type ReceiptKey,
  type ReceiptKeyProof,
  type ReceiptPayload,
  type ReceiptSigner,
} from './paywall/receipt-signer.js';
export { toFacilitatorPayload, decodePaymentHeader } from './paywall/x402-translate.js';
export {
  adaptStellarServerScheme,
  adaptStellarClientScheme,
  STELLAR_EXACT_PAYMENT_FLOWS,
  STELLAR_DEFAULT_ASSETS,
  STELLAR_DEFAULT_ASSET_TRANSFER_METHOD,
  type X402PaymentFlow,
  type X402PaymentFlowTable,
  type StellarDefaultAsset,
  type StellarServerSchemeMembers,
  type StellarClientSchemeMembers,
} from './x402/stock-stellar.js';
export {
  paidTool,
  PAID_TOOL_INSTRUCTIONS,
  X402_PAYMENT_META,
  X402_PAYMENT_RESPONSE_META,
  type PaidToolConfig,
  type PaidToolHandler,
} from './mcp/paid-tool.js';
export { statelessMcpHandler } from './mcp/serve.js';

type Schemas = components['schemas'];
type Body<Op extends keyof operations> = operations[Op] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;
/** Fields the contract gives a default are optional here (openapi-typescript marks defaulted fields required). */
type Defaulted<B, K extends keyof B> = Omit<B, K> & Partial<Pick<B, K>>;
/** Per-call options of a POST: your own Idempotency-Key (otherwise a random one is sent). */
export interface PostOptions {
  idempotencyKey?: string;
}

export interface SellerClientOptions {
  /** The marketplace API, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /**
   * The seller's API key (returned once by `sellers.create`). Only `sellers.create` and the public reads work
   * without one; after signing up, use `client.withApiKey(apiKey)`.
   */
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
  retry?: RetryOptions;
}

export type RawSellerClient = Client<paths>;

/** Anything that can sign a SEP-53 message for a Stellar account (a browser wallet, an HSM, a Keypair wrapper). */
export interface WalletSigner {
  /** The account (`G...`). */
  publicKey(): string;
  /** The ed25519 signature of SHA-256("Stellar Signed Message:\n" + message): 64 bytes, or their base64. */
  signMessage(message: string): Promise<Uint8Array | string> | Uint8Array | string;
}

export interface SignUpInput {
  displayName: string;
  domain: string;
  /** The seller's wallet: a Keypair, its secret seed (`S...`), or a WalletSigner. It becomes the seller's
   * walletAddress. */
  wallet: Keypair | string | WalletSigner;
}

/** SEP-53: the digest a Stellar wallet signs for a message. */
export function sep53Digest(message: string): Buffer {
  return hash(Buffer.concat([Buffer.from('Stellar Signed Message:\n', 'utf8'), Buffer.from(message, 'utf8')]));
}

/** Signs a message with SEP-53 semantics and returns the base64 signature. */
export function signMessage(keypair: Keypair, message: string): string {
  return keypair.sign(sep53Digest(message)).toString('base64');
}

function toWalletSigner(wallet: Keypair | string | WalletSigner): WalletSigner {
  if (typeof wallet === 'string') return toWalletSigner(Keypair.fromSecret(wallet));
  if ('signMessage' in wallet && typeof wallet.signMessage === 'function') return wallet;
  // A Keypair (also one from another copy of the Stellar SDK: duck-typed on sign + publicKey).
  const keypair = wallet as Keypair;
  return { publicKey: () => keypair.publicKey(), signMessage: (m) => keypair.sign(sep53Digest(m)).toString('base64') };
}

const toBase64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

const idem = (o?: PostOptions) => (o?.idempotencyKey ? { 'Idempotency-Key': o.idempotencyKey } : undefined);

export function createSellerClient(options: SellerClientOptions) {
  const raw = createTransport<paths>({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    fetch: options.fetch,
    retry: options.retry,
  });
  const publicRaw = options.apiKey
    ? createTransport<paths>({ baseUrl: options.baseUrl, fetch: options.fetch, retry: options.retry })
    : raw;

  const sellers = {
    /** The seller's public profile (`get`), its listed resources (`resources`, `iterateResources`). */
    ...sellerReads(raw),
    /**
     * Signs up (public) in both steps: asks for a wallet challenge (`POST /v1/sellers/challenges`), signs it with the
     * wallet (SEP-53 signed message) and creates the seller with that proof. `wallet` is a Stellar SDK `Keypair`, a
     * secret seed (`S...`) or a `WalletSigner` (e.g. a browser wallet); the secret never leaves this process. The
     * answer holds the API key, shown exactly once (a retry never returns it again: 409 IDEMPOTENCY_CONFLICT).
     */
    signUp: async (input: SignUpInput, o?: PostOptions): Promise<Schemas['SellerCreated']> => {
      const signer = toWalletSigner(input.wallet);
      const walletAddress = signer.publicKey();
      const challenge = await sellers.challenge(walletAddress);
      const signature = await signer.signMessage(challenge.message);
      const { wallet: _w, ...profile } = input;
      return sellers.create(
        {
          ...profile,
          walletAddress,
          walletProof: {
            challengeId: challenge.challengeId,
            signature: typeof signature === 'string' ? signature : toBase64(signature),
          },
        },
        o,
      );
    },
    /** Step one of sign-up: a short-lived, single-use challenge for the wallet to sign. */
    challenge: (walletAddress: string, o?: PostOptions): Promise<Schemas['SellerChallenge']> =>
      data(raw.POST('/v1/sellers/challenges', { body: { walletAddress }, headers: idem(o) })),
    /** Step two of sign-up, with a `walletProof` you built yourself (see `signUp`, which does both steps). */
    create: (input: Body<'createSeller'>, o?: PostOptions): Promise<Schemas['SellerCreated']> =>
      data(raw.POST('/v1/sellers', { body: input, headers: idem(o) })),
    verifyDomain: (
      sellerId: string,
      input: Body<'verifySellerDomain'>,
      o?: PostOptions,
    ): Promise<Schemas['DomainVerification']> =>
      data(
        raw.POST('/v1/sellers/{sellerId}/verify-domain', {
          params: { path: { sellerId } },
          body: input,
          headers: idem(o),
        }),
      ),
    /**
     * The seller's receipt keys: `publish` replaces the set (admin key), `get` reads it (public). Buyers verify the
     * paywall's signed receipts against it. Give `publish` the ReceiptKey of createReceiptKey() for each new key: it
     * sends the public half and signs the proof of possession with the private half (which never leaves). A key
     * already published may be given as its public JWK (no proof needed, e.g. a retired key kept for old receipts).
     */
    receiptKeys: {
      get: (sellerId: string): Promise<Schemas['SellerReceiptKeys']> =>
        data(raw.GET('/v1/sellers/{sellerId}/receipt-keys', { params: { path: { sellerId } } })),
      publish: async (
        sellerId: string,
        input: { keys: Array<ReceiptKey | Schemas['SellerReceiptKey']>; proofs?: Schemas['ReceiptKeyProof'][] },
      ): Promise<Schemas['SellerReceiptKeys']> => {
        const isReceiptKey = (k: ReceiptKey | Schemas['SellerReceiptKey']): k is ReceiptKey =>
          typeof (k as ReceiptKey).privateJwk === 'object' && (k as ReceiptKey).privateJwk !== null;
        const keys = input.keys.map((k) => (isReceiptKey(k) ? k.publicJwk : k));
        const proofs = [
          ...(input.proofs ?? []),
          ...(await Promise.all(input.keys.filter(isReceiptKey).map((k) => receiptKeyProof(k.privateJwk, sellerId)))),
        ];
        return data(
          raw.PUT('/v1/sellers/{sellerId}/receipt-keys', {
            params: { path: { sellerId } },
            body: { keys, ...(proofs.length ? { proofs } : {}) },
          }),
        );
      },
    },
  };

  const resources = {
    /** The created resource and its readiness `warnings` (e.g. TRUSTLINE_REQUIRED on payTo: the wallet cannot receive
     * yet). */
    create: (input: Body<'createResource'>, o?: PostOptions): Promise<Schemas['ResourceCreated']> =>
      data(raw.POST('/v1/resources', { body: input, headers: idem(o) })) as Promise<Schemas['ResourceCreated']>,
    /** get, list, iterate, versions, iterateVersions. */
    ...resourceReads(raw),
    /** The public read of a resource, sent without the API key (what buyers see; used by paywall and paidTool). */
    getPublic: (id: string): Promise<Schemas['ResourceDetail']> =>
      data(publicRaw.GET('/v1/resources/{id}', { params: { path: { id } } })),
    update: (id: string, patch: Body<'updateResource'>): Promise<Schemas['ResourceDetail']> =>
      data(raw.PATCH('/v1/resources/{id}', { params: { path: { id } }, body: patch })) as Promise<
        Schemas['ResourceDetail']
      >,
    delete: (id: string): Promise<Schemas['ResourceDeletion']> =>
      data(raw.DELETE('/v1/resources/{id}', { params: { path: { id } } })) as Promise<Schemas['ResourceDeletion']>,
  };

  const catalog = {
    /** Checks a resource against the catalog rules without changing anything. */
    validate: (
      input: Defaulted<Body<'validateResource'>, 'trusted' | 'payToDeclared'>,
      o?: PostOptions,
    ): Promise<Schemas['ValidationResult']> =>
      data(raw.POST('/v1/discovery/validate', { body: input as Body<'validateResource'>, headers: idem(o) })),
    /** Validates and publishes a resource in discovery. */
    catalog: (
      input: Defaulted<Body<'catalogResource'>, 'trusted' | 'payToDeclared'>,
      o?: PostOptions,
    ): Promise<Schemas['CatalogResult']> =>
      data(raw.POST('/v1/discovery/catalog', { body: input as Body<'catalogResource'>, headers: idem(o) })) as Promise<
        Schemas['CatalogResult']
      >,
  };

  const discovery = discoveryReads(raw);

  const payments = {
    /** Payment attempts (GET /v1/payments; a seller key sees only its own). Pass `sellerId` to use the seller's own
     * list. */
    list: (query: Query<'listPayments'> = {}): Promise<Schemas['PaymentAttemptList']> =>
      query.sellerId
        ? data(
            raw.GET('/v1/sellers/{sellerId}/payments', {
              params: { path: { sellerId: query.sellerId }, query: { ...query, sellerId: undefined } },
            }),
          )
        : data(raw.GET('/v1/payments', { params: { query } })),
    iterate: (query: NoCursor<Query<'listPayments'>> = {}): PageIterable<Schemas['PaymentAttempt']> =>
      paginate((cursor) => payments.list({ ...query, cursor })),
    get: (paymentId: string): Promise<Schemas['PaymentDetail']> =>
      data(raw.GET('/v1/payments/{paymentId}', { params: { path: { paymentId } } })),
  };

  const { settlements, receipts, networks } = ledgerRecordReads(raw);

  const facilitator = {
    supported: (): Promise<Schemas['Supported']> => data(raw.GET('/v1/supported')),
    verify: (input: Schemas['VerifyRequest'], o?: PostOptions): Promise<Schemas['VerifyResponse']> =>
      data(raw.POST('/v1/verify', { body: input, headers: idem(o) })),
    settle: (input: Schemas['SettleRequest'], o?: PostOptions): Promise<Schemas['SettleResponse']> =>
      data(raw.POST('/v1/settle', { body: input, headers: idem(o) })) as Promise<Schemas['SettleResponse']>,
  };

  /** The seller's API keys: create (secret shown once), list, revoke (see keys.ts). */
  const keys = sellerKeys(raw, idem);

  return {
    sellers,
    keys,
    resources,
    catalog,
    discovery,
    payments,
    settlements,
    receipts,
    facilitator,
    networks,
    /** Whether a wallet can receive the marketplace's assets (checkWalletReadiness on this client's marketplace). */
    wallet: {
      readiness: (walletAddress: string, network?: string): Promise<WalletReadiness> =>
        checkWalletReadiness({ baseUrl: options.baseUrl, walletAddress, network, fetch: options.fetch }),
    },
    /** A client with the same options and another API key (e.g. the one `sellers.create` returned). */
    withApiKey: (apiKey: string) => createSellerClient({ ...options, apiKey }),
    /** The typed openapi-fetch client for anything else (errors still throw ApiError). */
    raw,
  };
}

export type SellerClient = ReturnType<typeof createSellerClient>;
export {
  checkWalletReadiness,
  type WalletReadiness,
  type WalletReadinessOptions,
  type WalletAssetReadiness,
} from './wallet/readiness.js';
