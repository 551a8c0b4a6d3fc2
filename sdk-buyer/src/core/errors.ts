/**
 * The one error class of the SDK (one source for both SDKs: scripts/generate.mjs copies sdk-buyer/src/core into
 * sdk-seller/src/core as generated code, so each package stands alone). Modelled on Octokit's RequestError and
 * stripe-node's typed errors.
 *
 * An ApiError carries the HTTP status, the contract's stable `code` (ErrorCode enum), the human message, the
 * request id (also sent as `X-Request-Id`) and the field-level `details`. It never holds the request headers, so
 * the API key cannot leak through `message`, `toJSON()`, `util.inspect` or a logger.
 */
export interface ApiErrorDetail {
  field?: string;
  message: string;
  code?: string;
}

export interface ApiErrorInit {
  status: number;
  code: string;
  message: string;
  requestId?: string | null;
  details?: ApiErrorDetail[];
  method?: string;
  url?: string;
  retryAfterSeconds?: number | null;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** HTTP status (0 when no response was received: see `code === 'NETWORK_ERROR'`). */
  readonly status: number;
  /** The contract's UPPER_SNAKE error code (`RESOURCE_NOT_FOUND`, `RATE_LIMITED`, ...). */
  readonly code: string;
  /** Quote it when you report a problem. */
  readonly requestId: string | null;
  readonly details: ApiErrorDetail[];
  readonly method?: string;
  /** The request URL without its query string. */
  readonly url?: string;
  readonly retryAfterSeconds: number | null;

  constructor(init: ApiErrorInit) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId ?? null;
    this.details = init.details ?? [];
    this.method = init.method;
    this.url = init.url;
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      status: this.status,
      code: this.code,
      message: this.message,
      requestId: this.requestId,
      details: this.details,
      method: this.method,
      url: this.url,
    };
  }

  /** Builds an ApiError from an error response of the API (the contract's envelope, or anything else). */
  static async fromResponse(response: Response, request?: Request): Promise<ApiError> {
    let body: unknown;
    const text = await response
      .clone()
      .text()
      .catch(() => '');
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const envelope = (
      body as { error?: { code?: unknown; message?: unknown; requestId?: unknown; details?: unknown } } | undefined
    )?.error;
    const retryAfter = parseRetryAfter(response.headers.get('retry-after'));
    const requestId =
      typeof envelope?.requestId === 'string' ? envelope.requestId : response.headers.get('x-request-id');
    return new ApiError({
      status: response.status,
      code: typeof envelope?.code === 'string' ? envelope.code : codeForStatus(response.status),
      message:
        typeof envelope?.message === 'string'
          ? envelope.message
          : `HTTP ${response.status} ${response.statusText || ''}`.trim(),
      requestId,
      details: Array.isArray(envelope?.details) ? (envelope.details as ApiErrorDetail[]) : [],
      method: request?.method,
      url: request ? stripQuery(request.url) : undefined,
      retryAfterSeconds: retryAfter === null ? null : retryAfter / 1000,
    });
  }
}

/** Retry-After as milliseconds (delta-seconds or an HTTP date); null when absent or unreadable. */
export function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

function codeForStatus(status: number): string {
  if (status === 400) return 'INVALID_REQUEST';
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 429) return 'RATE_LIMITED';
  if (status === 502) return 'BAD_GATEWAY';
  if (status === 503) return 'SERVICE_UNAVAILABLE';
  return status >= 500 ? 'INTERNAL_ERROR' : 'HTTP_ERROR';
}

export function stripQuery(url: string): string {
  const i = url.indexOf('?');
  return i === -1 ? url : url.slice(0, i);
}
