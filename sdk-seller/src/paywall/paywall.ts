/**
 * paywall(): an Express (or any connect-style) middleware that charges for a route through the marketplace's x402
 * facilitator. Order of events for one request:
 *
 * 1. No `PAYMENT-SIGNATURE` / `X-PAYMENT` header: answer 402 with the resource's requirements, as the x402 v2
 *    `PAYMENT-REQUIRED` header (base64 JSON) and the same PaymentRequired JSON body. The handler does not run.
 * 2. A payment header: translate it (ours, or the stock x402 `exact` Stellar payload) and call POST /v1/verify
 *    BEFORE the handler runs. A refusal answers 402 with the facilitator's error code (502 when the facilitator
 *    itself failed). The handler does not run.
 * 3. The handler runs while its response is held: `writeHead`, `write`, `end` (so `res.json`/`res.send`) are
 *    buffered in memory and nothing reaches the client.
 * 4. If the handler's status is an error (>= 400), nothing is settled and its response is sent as is, unpaid.
 *    Otherwise POST /v1/settle, and the held response leaves ONLY on a confirmed settlement (settle-outcome.ts): a
 *    cut connection, `409` "still in progress" or `202 settlement_pending` make the paywall ask the service for the
 *    payment's outcome (bounded wait). Confirmed: `PAYMENT-RESPONSE` (base64 JSON: success, status "settled",
 *    transactionHash, receiptId, network, payer, the attestation, the seller's own receipt when a receiptSigner is
 *    given: it binds the seller's configured resource URL and terms, never the request's Host header) is added and
 *    the response released. Definite failure: the content is dropped, 402 with the reason.
 *    Still unknown when the wait ends: the content is dropped, 503 SETTLEMENT_UNCONFIRMED with the payment id (no
 *    PAYMENT-REQUIRED: the buyer must not pay again while the payment may still settle).
 *
 * Caching: every answer the paywall writes itself (402, 409, 400, 502, 503) carries `Cache-Control: no-store`; a paid
 * 200 carries `private` (the handler's own directives are kept, `public` and `s-maxage` removed), so no shared cache
 * hands one buyer's paid content to the next.
 *
 * Path tricks: a request whose path decodes to another segment structure than the raw one (an encoded slash or
 * backslash `%2F` `%5C`, an encoded dot segment, a control character such as `%0A` that a route regex without
 * dotAll does not see, a malformed escape) is refused 400 INVALID_REQUEST before anything is verified or run.
 *
 * A facilitator call (verify or settle) without an answer within 30 s (`settle.facilitatorTimeoutMs`) is
 * indeterminate, never a failure: no content, 503 with Retry-After, "the outcome is pending", no PAYMENT-REQUIRED.
 *
 * One signed payment buys exactly one delivery. The facilitator verifies an authorization once: when several
 * requests carry the same payment (concurrently or later), only the first is verified and served; every other one
 * is answered 409 REPLAY_DETECTED before its handler runs. The same holds when settlement finds the payment already
 * claimed (409, the paid content is dropped).
 *
 * The whole response body is buffered, so this suits JSON-sized answers, not streams.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Asset } from '@stellar/stellar-sdk';
import type { components } from '../generated/openapi.js';
import { ApiError } from '../core/errors.js';
import { amountProblem, toStroops } from '../core/amounts.js';
import { decodePaymentHeader, PayloadError, toFacilitatorPayload } from './x402-translate.js';
import {
  confirmedSettlementResponse,
  FacilitatorTimeout,
  pendingMessage,
  settleOutcome,
  verifyWithFacilitator,
  type SettleOutcome,
  type SettleWait,
  type SettlingClient,
} from './settle-outcome.js';
import type { ReceiptPayload, ReceiptSigner } from './receipt-signer.js';
import {
  createKeyCheck,
  MISCONFIGURED_MESSAGE,
  trustlineMessage,
  type KeyCheckClient,
  type ReadinessClient,
} from './seller-checks.js';

type Schemas = components['schemas'];
type Requirements = Schemas['ResourcePaymentRequirements'];

/** What the paywall needs of the seller client (createSellerClient returns it). */
export interface PaywallClient extends SettlingClient {
  /**
   * The resource's terms. `getPublic` (the seller client's anonymous read) is preferred, so the paywall's key needs
   * no catalog permission: a payments-scoped key (verify, settle, read own payments) is enough.
   */
  resources: {
    get(id: string): Promise<{ id: string; sellerId?: string; paymentRequirements: Requirements }>;
    getPublic?(id: string): Promise<{ id: string; sellerId?: string; paymentRequirements: Requirements }>;
  };
  /** The seller's own payments: the key check reads one (createSellerClient has it; without it the key is not checked).
   * */
  payments?: SettlingClient['payments'] & KeyCheckClient['payments'];
  /** Wallet readiness: tells a buyer whose wallet lacks a trustline (createSellerClient has it). */
  wallet?: ReadinessClient['wallet'];
  facilitator: SettlingClient['facilitator'] & {
    verify(input: Schemas['VerifyRequest']): Promise<Schemas['VerifyResponse']>;
  };
}

export interface PaywallOptions {
  /** The seller client: its facilitator calls go to the marketplace it was created for. */
  client: PaywallClient;
  /** The cataloged resource this route serves. Settling needs it. */
  resourceId: string;
  /**
   * The terms, when you do not want them read from the resource (GET /v1/resources/{id}, cached for
   * `requirementsTtlMs`). `asset.contractId` is derived when missing.
   */
  requirements?: Omit<Requirements, 'asset'> & { asset: { code: string; issuer: string; contractId?: string } };
  /** Default 60 s. */
  requirementsTtlMs?: number;
  /** Shown in the 402's `resource`. */
  description?: string;
  mimeType?: string;
  /** How long to find out a settlement's outcome when the answer is not final (see settle-outcome.ts). */
  settle?: SettleWait;
  /** Signs the seller's own offer-and-receipt receipt for each confirmed sale (see createReceiptSigner). */
  receiptSigner?: ReceiptSigner;
  /**
   * Told once, in words, when the seller's setup is wrong: the marketplace refused the paywall's key, or the seller's
   * wallet cannot receive the asset. Default: console.error. (See seller-checks.ts.)
   */
  onMisconfigured?: (message: string) => void;
}

/** The middleware, and `ready()`: resolves once the marketplace accepted the paywall's key, rejects
 * (PaywallConfigurationError) when it refused it. */
export type PaywallMiddleware = ((req: IncomingMessage, res: ServerResponse, next: Next) => void) & {
  ready(): Promise<void>;
};

/** What the handler finds in `res.locals.payment` (Express) once the payment is verified. */
export interface PaywallPayment {
  paymentAttemptId: string;
  payer: string;
  network: string;
}

type Next = (err?: unknown) => void;
const PASSPHRASES: Record<string, string> = {
  'stellar:testnet': 'Test SDF Network ; September 2015',
  'stellar:pubnet': 'Public Global Stellar Network ; September 2015',
};

export function paywall(options: PaywallOptions): PaywallMiddleware {
  if (!options.resourceId)
    throw new TypeError('paywall: resourceId is required (settlement is recorded against the cataloged resource)');
  const problem = options.requirements ? amountProblem(options.requirements.amount) : null;
  if (problem) throw new RangeError(`paywall: requirements.amount: ${problem}`);
  const requirements = requirementsSource(options);
  const report = options.onMisconfigured ?? ((message: string) => console.error(message));
  const keyCheck = createKeyCheck(options.client, options.resourceId, report);
  void keyCheck.ready().catch(() => undefined); // at start: a refused key is reported before the first buyer comes

  function paymentRequired(req: IncomingMessage, terms: Requirements, error: string) {
    return paymentRequiredFor(
      terms,
      options.resourceId,
      {
        url: absoluteUrl(req),
        description: options.description ?? '',
        mimeType: options.mimeType ?? 'application/json',
      },
      error,
    );
  }

  function answer(res: ServerResponse, status: number, body: unknown, paymentRequiredHeader?: unknown): void {
    res.statusCode = status;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    if (paymentRequiredHeader) res.setHeader('PAYMENT-REQUIRED', encode(paymentRequiredHeader));
    res.end(JSON.stringify(body));
  }

  const middleware = (req: IncomingMessage, res: ServerResponse, next: Next) => {
    void (async () => {
      const trick = pathProblem(req);
      if (trick)
        return answer(res, 400, {
          ok: false,
          error: {
            code: 'INVALID_REQUEST',
            message: `The request path is refused: ${trick}`,
            details: [{ field: 'path', message: trick }],
          },
        });
      await keyCheck.ready().catch(() => undefined);
      if (keyCheck.refused()) return misconfigured(res);
      let terms: Requirements;
      try {
        terms = await requirements();
      } catch (err) {
        return answer(res, 502, errorBody(err, 'Could not read the payment requirements'));
      }
      const header = req.headers['payment-signature'] ?? req.headers['x-payment'];
      const headerValue = Array.isArray(header) ? header[0] : header;
      if (!headerValue) {
        const pr = paymentRequired(req, terms, 'PAYMENT_REQUIRED');
        return answer(res, 402, pr, pr);
      }

      let payload: Schemas['PaymentPayload'];
      try {
        payload = toFacilitatorPayload(decodePaymentHeader(headerValue), terms);
      } catch (err) {
        const code = err instanceof PayloadError ? err.code : 'INVALID_PAYMENT_PAYLOAD';
        const pr = { ...paymentRequired(req, terms, code), message: (err as Error).message };
        return answer(res, 402, pr, pr);
      }

      const paymentRequirements = facilitatorRequirements(terms);
      let verified: Schemas['VerifyResponse'];
      try {
        verified = await verifyWithFacilitator(
          options.client,
          payload,
          paymentRequirements,
          options.resourceId,
          options.settle,
        );
      } catch (err) {
        return refuse(req, res, terms, err);
      }

      const held = hold(res);
      const locals = ((res as ServerResponse & { locals?: Record<string, unknown> }).locals ??= {});
      locals.payment = {
        paymentAttemptId: verified.paymentAttemptId,
        payer: verified.payer,
        network: verified.network,
      } satisfies PaywallPayment;

      held.onEnd(async () => {
        if (held.statusCode() >= 400) return held.release();
        const outcome = await settleOutcome(
          options.client,
          { paymentAttemptId: verified.paymentAttemptId, paymentPayload: payload, resourceId: options.resourceId },
          options.settle,
        );
        if (outcome.kind !== 'settled') {
          held.discard();
          return refuseOutcome(req, res, terms, outcome);
        }
        res.setHeader(
          'PAYMENT-RESPONSE',
          encode(await settlementResponse(outcome, verified.payer, { signer: options.receiptSigner, terms })),
        );
        held.privateCache();
        held.release();
      });
      next();
    })().catch(next);
  };
  return Object.assign(middleware, { ready: () => keyCheck.ready() });

  /** The seller's key was refused: the buyer is told the seller is misconfigured (503, no PAYMENT-REQUIRED: do not
   * pay). */
  function misconfigured(res: ServerResponse): void {
    res.setHeader('Retry-After', '60');
    answer(res, 503, { ok: false, error: { code: 'SERVICE_UNAVAILABLE', message: MISCONFIGURED_MESSAGE } });
  }

  /** Settlement not confirmed: a definite failure is 402 with its reason; an unknown outcome is 503 (do not pay again).
   * */
  function refuseOutcome(
    req: IncomingMessage,
    res: ServerResponse,
    terms: Requirements,
    outcome: Exclude<SettleOutcome, { kind: 'settled' }>,
  ): void | Promise<void> {
    if (outcome.kind === 'failed') {
      if (outcome.error) return refuse(req, res, terms, outcome.error);
      const body = {
        ...paymentRequired(req, terms, outcome.code),
        ok: false,
        error: { code: outcome.code, message: outcome.message },
      };
      return answer(res, 402, body, body);
    }
    res.setHeader('Retry-After', '5');
    answer(res, 503, {
      ok: false,
      error: {
        code: outcome.code,
        message: outcome.message,
        details: [{ field: 'paymentAttemptId', message: outcome.paymentAttemptId }],
      },
    });
  }

  /** TRUSTLINE_REQUIRED, said for the side that lacks it (the seller is warned when it is its own wallet). */
  async function whoseTrustline(terms: Requirements, err: ApiError): Promise<ApiError> {
    const said = await trustlineMessage(options.client, terms);
    if (said.side === 'seller')
      report(
        `paywall(${options.resourceId}): ${said.message} Buyers cannot pay until the wallet ${terms.payTo} adds ` +
          `the trustline.`,
      );
    return new ApiError({
      status: err.status,
      code: err.code,
      message: said.message,
      requestId: err.requestId ?? undefined,
      details: err.details,
      method: err.method,
      url: err.url,
    });
  }

  async function refuse(req: IncomingMessage, res: ServerResponse, terms: Requirements, err: unknown): Promise<void> {
    if (err instanceof FacilitatorTimeout) {
      // Indeterminate, not a refusal: the buyer is not told the payment failed, nor asked to pay again.
      res.setHeader('Retry-After', '5');
      return answer(res, 503, { ok: false, error: { code: 'SETTLEMENT_UNCONFIRMED', message: pendingMessage(err) } });
    }
    if (keyCheck.refusedBy(err)) return misconfigured(res);
    if (err instanceof ApiError && err.code === 'TRUSTLINE_REQUIRED') err = await whoseTrustline(terms, err);
    const clientSide = err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429;
    const body = {
      ...paymentRequired(req, terms, err instanceof ApiError ? err.code : 'SETTLEMENT_FAILED'),
      ...errorBody(err, 'Payment failed'),
    };
    // A payment already used is not a request for payment: 409, without PAYMENT-REQUIRED (paying again is the
    // buyer's decision, not an automatic retry).
    if (err instanceof ApiError && err.code === 'REPLAY_DETECTED') return answer(res, 409, body);
    answer(res, clientSide ? 402 : 502, body, clientSide ? body : undefined);
  }
}

/**
 * The pieces below are shared with the MCP paid tool (src/mcp/paid-tool.ts): one place builds the terms, the x402
 * PaymentRequired, the facilitator's requirements and the settlement response for every entrance.
 */
export type SellerRequirements = Requirements;
export type RequirementsOptions = Pick<PaywallOptions, 'client' | 'resourceId' | 'requirements' | 'requirementsTtlMs'>;

/** The resource's current terms: `options.requirements`, else GET /v1/resources/{id} cached for `requirementsTtlMs`. */
export function requirementsSource(options: RequirementsOptions): () => Promise<Requirements> {
  const ttl = options.requirementsTtlMs ?? 60_000;
  let cached: { value: Requirements; at: number } | null = null;
  return async function requirements(): Promise<Requirements> {
    if (options.requirements) {
      const r = options.requirements;
      return {
        ...r,
        asset: {
          ...r.asset,
          contractId: r.asset.contractId ?? new Asset(r.asset.code, r.asset.issuer).contractId(PASSPHRASES[r.network]),
        },
      };
    }
    if (cached && Date.now() - cached.at < ttl) return cached.value;
    const read = options.client.resources.getPublic ?? options.client.resources.get;
    const resource = await read(options.resourceId);
    cached = { value: resource.paymentRequirements, at: Date.now() };
    return cached.value;
  };
}

/** The x402 v2 PaymentRequired for `terms` (amount in stroops, asset = the SAC contract id; code/issuer in `extra`). */
export function paymentRequiredFor(
  terms: Requirements,
  resourceId: string,
  resource: { url: string; description: string; mimeType: string },
  error: string,
) {
  return {
    x402Version: 2,
    error,
    resource,
    accepts: [
      {
        scheme: 'exact',
        network: terms.network,
        amount: toStroops(terms.amount).toString(),
        asset: terms.asset.contractId,
        payTo: terms.payTo,
        maxTimeoutSeconds: terms.maxTimeoutSeconds,
        extra: {
          areFeesSponsored: true,
          asset: { code: terms.asset.code, issuer: terms.asset.issuer },
          amount: terms.amount,
          resourceId,
        },
      },
    ],
  };
}

/** What POST /v1/verify is asked to check the payment against. */
export function facilitatorRequirements(terms: Requirements): Schemas['PaymentRequirements'] {
  return {
    scheme: 'exact',
    network: terms.network,
    amount: terms.amount,
    payTo: terms.payTo,
    asset: { code: terms.asset.code, issuer: terms.asset.issuer },
    maxTimeoutSeconds: terms.maxTimeoutSeconds,
    resource: terms.resource,
  };
}

/**
 * The x402 SettlementResponse of a CONFIRMED settlement (PAYMENT-RESPONSE header, MCP
 * `_meta["x402/payment-response"]`) with our receipt id, the marketplace's attestation or signed receipt when the
 * settle answer carried one, and the seller's own offer-and-receipt receipt when a receipt signer is configured.
 */
export async function settlementResponse(
  outcome: Extract<SettleOutcome, { kind: 'settled' }>,
  payer: string,
  receipt?: { signer?: ReceiptSigner; terms: Requirements },
) {
  const extensions: Record<string, unknown> = {};
  // The marketplace's attestation (not a seller receipt): the buyer checks it against GET /.well-known/jwks.json.
  if (outcome.attestation) extensions.marketplace = { attestation: outcome.attestation };
  if (receipt?.signer) {
    extensions['offer-receipt'] = {
      info: {
        version: 1,
        receipt: {
          format: 'jws',
          signature: await receipt.signer.sign(sellerReceiptPayload(receipt.terms, payer, outcome.transactionHash)),
        },
      },
    };
  }
  return confirmedSettlementResponse(outcome, payer, {
    evidence: outcome.evidence,
    ...(outcome.attestation ? { attestation: outcome.attestation } : {}),
    ...(Object.keys(extensions).length ? { extensions } : {}),
  });
}

/**
 * What the seller's receipt says: the seller's OWN terms (the configured resource URL, network, amount, asset,
 * payTo), never anything the request carried (not its Host header), with the payer and transaction of the sale.
 */
export function sellerReceiptPayload(terms: Requirements, payer: string, transaction: string): ReceiptPayload {
  return {
    version: 1,
    network: terms.network,
    resourceUrl: terms.resource,
    payer,
    issuedAt: Math.floor(Date.now() / 1000),
    transaction,
    scheme: 'exact',
    amount: toStroops(terms.amount).toString(),
    asset: terms.asset.contractId,
    payTo: terms.payTo,
  };
}

export function errorBody(err: unknown, fallback: string) {
  if (err instanceof ApiError)
    return {
      ok: false,
      error: { code: err.code, message: err.message, requestId: err.requestId, details: err.details },
    };
  return { ok: false, error: { code: 'SERVICE_UNAVAILABLE', message: fallback } };
}

/** Buffers writeHead/write/end of a response until release() (send it) or discard() (drop it). */
function hold(res: ServerResponse) {
  const original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders };
  const chunks: Array<{ chunk: unknown; encoding?: BufferEncoding }> = [];
  let head: unknown[] | null = null;
  let onEnd: (() => Promise<void>) | null = null;
  let ended = false;

  const r = res as unknown as Record<string, unknown>;
  r.writeHead = (...args: unknown[]) => {
    head = args;
    if (typeof args[0] === 'number') res.statusCode = args[0];
    return res;
  };
  r.flushHeaders = () => undefined;
  r.write = (chunk: unknown, encoding?: unknown, cb?: unknown) => {
    if (chunk != null)
      chunks.push({ chunk, encoding: typeof encoding === 'string' ? (encoding as BufferEncoding) : undefined });
    const callback = typeof encoding === 'function' ? encoding : cb;
    if (typeof callback === 'function') queueMicrotask(() => (callback as () => void)());
    return true;
  };
  r.end = (chunk?: unknown, encoding?: unknown, cb?: unknown) => {
    if (ended) return res;
    ended = true;
    if (chunk != null && typeof chunk !== 'function')
      chunks.push({ chunk, encoding: typeof encoding === 'string' ? (encoding as BufferEncoding) : undefined });
    const callback = [chunk, encoding, cb].find((x) => typeof x === 'function');
    if (callback) res.once('finish', callback as () => void);
    void onEnd?.();
    return res;
  };
  const restore = () => Object.assign(r, original);

  return {
    onEnd(fn: () => Promise<void>) {
      onEnd = () =>
        fn().catch((err) => {
          restore();
          chunks.length = 0;
          for (const name of res.getHeaderNames())
            if (/^(content-|etag$|last-modified$|transfer-encoding$)/i.test(name)) res.removeHeader(name);
          if (!res.headersSent) {
            res.statusCode = 502;
            res.setHeader('Content-Type', 'application/json; charset=utf-8');
            res.end(JSON.stringify({ ok: false, error: { code: 'INTERNAL_ERROR', message: (err as Error).message } }));
          } else res.destroy(err as Error);
        });
    },
    /** A paid answer is for this buyer only: `private`, the handler's directives kept but `public` and `s-maxage`. */
    privateCache() {
      const headers =
        head && typeof head[head.length - 1] === 'object' ? (head[head.length - 1] as Record<string, unknown>) : null;
      const key = headers ? Object.keys(headers).find((k) => k.toLowerCase() === 'cache-control') : undefined;
      const own = String((key && headers ? headers[key] : undefined) ?? res.getHeader('Cache-Control') ?? '');
      if (key && headers) delete headers[key];
      const kept = own
        .split(',')
        .map((d) => d.trim())
        .filter((d) => d && !/^(public|private|s-maxage\b.*)$/i.test(d));
      res.setHeader('Cache-Control', ['private', ...kept].join(', '));
    },
    statusCode: () => (head && typeof head[0] === 'number' ? head[0] : res.statusCode),
    release() {
      restore();
      if (head) (original.writeHead as (...a: unknown[]) => void).apply(res, head);
      for (const { chunk, encoding } of chunks)
        (original.write as (c: unknown, e?: BufferEncoding) => boolean).call(res, chunk, encoding);
      (original.end as () => void).call(res);
    },
    discard() {
      restore();
      chunks.length = 0;
      head = null;
      for (const name of res.getHeaderNames())
        if (/^(content-|etag$|last-modified$|transfer-encoding$)/i.test(name)) res.removeHeader(name);
    },
  };
}

/**
 * Why a request path must not reach a paid route, or null: its decoded form must have the raw form's segments.
 * An encoded `/` or `\` (`%2F`, `%5C`) joins or splits segments after decoding, `%2E%2E` is a dot segment in
 * disguise, and a control character (`%0A`, `%0D`, `%00`...) escapes a route regex's `.` without the dotAll flag.
 */
export function pathProblem(req: IncomingMessage): string | null {
  const r = req as IncomingMessage & { originalUrl?: string };
  const raw = (r.originalUrl ?? req.url ?? '/').split('?')[0]!;
  if (/[\u0000-\u001f\u007f]/.test(raw)) return 'a control character in the path';
  for (const segment of raw.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return 'a malformed percent-encoding in the path';
    }
    if (/[/\\]/.test(decoded)) return 'an encoded slash or backslash (%2F, %5C) in the path';
    if (/[\u0000-\u001f\u007f]/.test(decoded)) return 'an encoded control character (such as %0A) in the path';
    if (decoded !== segment && (decoded === '.' || decoded === '..')) return 'an encoded dot segment in the path';
  }
  return null;
}

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

function absoluteUrl(req: IncomingMessage): string {
  const r = req as IncomingMessage & { originalUrl?: string; protocol?: string };
  const proto = r.protocol ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  return `${proto}://${req.headers.host ?? 'localhost'}${r.originalUrl ?? req.url ?? '/'}`;
}
