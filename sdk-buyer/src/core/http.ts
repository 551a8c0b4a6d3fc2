/**
 * Transport of both SDKs (one source, copied into the seller SDK by scripts/generate.mjs): openapi-fetch with
 * middleware for the
 * API key, automatic Idempotency-Key on POST and throwing ApiError, over a fetch wrapper that retries safe cases.
 *
 * Retries (stripe-node style): network errors, 429 (waiting at least Retry-After), 502 and 503, with exponential
 * backoff and full jitter. Every method is retried, POST included, because every POST carries an Idempotency-Key
 * that the server honours (same key and body -> the first response replayed). 500 and other statuses are not
 * retried: the server may have done the work, and the caller must decide.
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { ApiError, parseRetryAfter, stripQuery } from './errors.js';

export interface RetryOptions {
  /** Extra attempts after the first. Default 2; 0 disables retries. */
  maxRetries?: number;
  /** First backoff in ms (doubles each attempt, full jitter). Default 250. */
  baseDelayMs?: number;
  /** Longest single wait, Retry-After included. Default 20000. */
  maxDelayMs?: number;
}

export interface TransportOptions {
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
  retry?: RetryOptions;
  /** Sent as User-Agent (Node) in addition to the SDK's name. */
  userAgent?: string;
  /** Overridable for tests: how the SDK waits between attempts. */
  sleep?: (ms: number) => Promise<void>;
  /** Overridable for tests: the key generator of Idempotency-Key. */
  idempotencyKey?: () => string;
}

const RETRY_STATUSES = new Set([429, 502, 503]);

export function createTransport<Paths extends object>(options: TransportOptions): Client<Paths> {
  const client = createClient<Paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), fetch: retryingFetch(options) });
  if (options.apiKey) client.use(bearerAuth(options.apiKey));
  client.use(idempotencyKeys(options.idempotencyKey));
  client.use(throwApiErrors());
  return client;
}

export function bearerAuth(apiKey: string): Middleware {
  return {
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${apiKey}`);
      return request;
    },
  };
}

/** Every POST gets an Idempotency-Key unless the caller set one (`headers: { 'Idempotency-Key': ... }`). */
export function idempotencyKeys(generate: () => string = () => globalThis.crypto.randomUUID()): Middleware {
  return {
    onRequest({ request }) {
      if (request.method === 'POST' && !request.headers.has('Idempotency-Key'))
        request.headers.set('Idempotency-Key', generate());
      return request;
    },
  };
}

/** Turns every non-2xx answer into an ApiError, so friendly methods return data and callers catch one type. */
export function throwApiErrors(): Middleware {
  return {
    async onResponse({ request, response }) {
      if (!response.ok) throw await ApiError.fromResponse(response, request);
      return undefined;
    },
  };
}

/** fetch with retries of network errors, 429 (honouring Retry-After), 502 and 503. */
export function retryingFetch(
  options: Pick<TransportOptions, 'fetch' | 'retry' | 'sleep'>,
): (input: Request) => Promise<Response> {
  const baseFetch = options.fetch ?? globalThis.fetch;
  const maxRetries = options.retry?.maxRetries ?? 2;
  const baseDelay = options.retry?.baseDelayMs ?? 250;
  const maxDelay = options.retry?.maxDelayMs ?? 20_000;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return async (input: Request) => {
    // A Request body can be read once: keep a pristine copy to clone for every attempt.
    const original = input.clone();
    for (let attempt = 0; ; attempt++) {
      const request = attempt === 0 ? input : original.clone();
      let response: Response;
      try {
        response = await baseFetch(request);
      } catch (err) {
        if (attempt >= maxRetries || request.signal?.aborted) {
          throw new ApiError({
            status: 0,
            code: 'NETWORK_ERROR',
            message: `Request failed before a response: ${(err as Error).message}`,
            method: request.method,
            url: stripQuery(request.url),
          });
        }
        await sleep(backoff(attempt, baseDelay, maxDelay));
        continue;
      }
      if (!RETRY_STATUSES.has(response.status) || attempt >= maxRetries) return response;
      const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
      await response.body?.cancel().catch(() => undefined);
      const delay = Math.min(maxDelay, Math.max(retryAfter ?? 0, backoff(attempt, baseDelay, maxDelay)));
      await sleep(delay);
    }
  };
}

/** Exponential backoff with full jitter: a random wait in [base*2^attempt / 2, base*2^attempt]. */
export function backoff(attempt: number, baseDelayMs: number, maxDelayMs: number): number {
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}
