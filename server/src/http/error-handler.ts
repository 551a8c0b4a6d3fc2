import type { ErrorRequestHandler, RequestHandler } from 'express';
import { DomainError, type ErrorCode, type ErrorDetail } from '../domain/errors';
import { MAX_ERROR_DETAILS, sendError } from './error-envelope';
import type { Logger } from '../logger';
import { LOCAL_DOMAIN_HINT } from '../domain/sellers/domain-verification';

interface ValidatorError {
  status?: number;
  statusCode?: number;
  type?: string;
  message?: string;
  errors?: Array<{ path?: string; message?: string; errorCode?: string }>;
  /** Problems found and not listed in `errors` (validation-bounds.ts: the unknown fields of a huge object). */
  omittedErrors?: number;
}

const FACILITATOR_PATHS = new Set(['/v1/verify', '/v1/settle']);

/** Maps body-parser and express-openapi-validator errors into the domain error that the envelope carries. */
function fromFrameworkError(err: ValidatorError, path: string): DomainError | null {
  if (err.type === 'entity.parse.failed')
    return new DomainError('INVALID_REQUEST', 'The request body is not valid JSON');
  if (err.type === 'entity.too.deep')
    return new DomainError('INVALID_REQUEST', err.message ?? 'The request body is nested too deeply');
  if (err.type === 'entity.too.large' || err.status === 413)
    return new DomainError('PAYLOAD_TOO_LARGE', 'The request body is too large');
  // body-parser: `application/json; charset=latin1` (charset.unsupported), an unknown Content-Encoding
  // (encoding.unsupported): the body cannot be read as UTF-8 JSON.
  if (err.type === 'charset.unsupported' || err.type === 'encoding.unsupported') {
    return new DomainError(
      'UNSUPPORTED_MEDIA_TYPE',
      'Unsupported charset or content encoding: send application/json in UTF-8 (no Content-Encoding)',
    );
  }
  const status = err.status ?? err.statusCode;
  // Any other client error of the body reader (http-errors with expose: an aborted or mis-sized body, ...).
  if (
    status &&
    status >= 400 &&
    status < 500 &&
    !Array.isArray(err.errors) &&
    (err as { expose?: unknown }).expose === true
  ) {
    return new DomainError(
      status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'INVALID_REQUEST',
      'The request body could not be read',
    );
  }
  if (!status || !Array.isArray(err.errors)) return null;
  const details = readableDetails(err.errors);
  let code: ErrorCode;
  if (status === 404) code = 'NOT_FOUND';
  else if (status === 405) code = 'METHOD_NOT_ALLOWED';
  else if (status === 415) code = 'UNSUPPORTED_MEDIA_TYPE';
  else if (status === 400) code = FACILITATOR_PATHS.has(path) ? 'INVALID_PAYMENT_PAYLOAD' : 'INVALID_REQUEST';
  else if (status >= 500)
    return null; // a response that breaks the contract: a bug, reported as INTERNAL_ERROR
  else code = 'INVALID_REQUEST';
  const total = details.length + (err.omittedErrors ?? 0);
  const listed = details.slice(0, MAX_ERROR_DETAILS).map((d) => (d.field ? `${d.field} ${d.message}` : d.message));
  const message =
    status === 404
      ? `No route ${path}`
      : status === 405
        ? 'Method not allowed on this route'
        : `The request does not match the API contract: ${listed.join('; ')}` +
          (total > listed.length
            ? `; and ${total - listed.length} more (${total} problems in all, ` +
              `the first ${listed.length} are in details)`
            : '');
  return new DomainError(code, message, details);
}

/**
 * What a person can act on (issue #22): the contract's patterns as words with an example, never the raw regular
 * expression; every error of the request (the validator runs with allErrors), one detail per field; the combinator
 * noise of oneOf/anyOf dropped when a more precise error exists. The answer lists the first MAX_ERROR_DETAILS of
 * them and counts the rest (error-envelope.ts, validation-bounds.ts: issue #29).
 */
const PATTERN_WORDS: Array<[RegExp, string]> = [
  [
    /^\^\(0\|\[1-9\]/,
    'must be a positive decimal amount written with a dot and at most 7 decimals, e.g. 0.01 or 12.5 (no comma, ' +
      'sign or exponent)',
  ],
  [/^\^G\[A-Z2-7\]\{55\}\$$/, 'must be a Stellar account address: G followed by 55 characters (A-Z, 2-7)'],
  [/^\^C\[A-Z2-7\]\{55\}\$$/, 'must be a Stellar contract address: C followed by 55 characters (A-Z, 2-7)'],
  [/^\^\[GC\]\[A-Z2-7\]\{55\}\$$/, 'must be a Stellar account (G...) or contract (C...) address of 56 characters'],
  [/^\^\[A-Za-z0-9\]\{1,12\}\$$/, 'must be an asset code of 1 to 12 letters or digits, e.g. USDC'],
  [
    /^\^\(\[a-z0-9\]/,
    `must be a lowercase domain name such as weather.example.com (no scheme, port or path); ${LOCAL_DOMAIN_HINT}`,
  ],
  [/^\^\[-a-z0-9\]\{3,8\}:/, 'must be a network id: stellar:testnet or stellar:pubnet'],
  [/^\^https\?:/, 'must be an absolute http(s) URL without spaces, e.g. https://api.example.com/v1/forecast/{city}'],
  [/^\^\[0-9a-f\]\{64\}\$$/, 'must be 64 lowercase hexadecimal characters (a transaction hash)'],
  [/^\^\[0-9\]\{1,30\}\$$/, 'must be a whole number of atomic units (digits only), e.g. 100000'],
  [/^\^\[A-Za-z0-9\+\/\]\+=\{0,2\}\$$/, 'must be base64'],
];
const ID_PATTERN = /^\^([a-z]{2,4})_\[/;

function patternWords(pattern: string): string {
  const id = ID_PATTERN.exec(pattern);
  if (id) return `must be an id starting with ${id[1]}_ followed by 26 characters, as the API returned it`;
  for (const [re, words] of PATTERN_WORDS) if (re.test(pattern)) return words;
  return 'does not have the expected format (see this field in the API documentation at /docs)';
}

function readableDetails(errors: NonNullable<ValidatorError['errors']>): ErrorDetail[] {
  const byField = new Map<string, { messages: string[]; precise: boolean }>();
  for (const e of errors) {
    const field = (e.path ?? '').replace(/^\/(body|query|params|headers)\/?/, '').replace(/\//g, '.');
    const keyword = (e.errorCode ?? '').split('.')[0];
    const raw = e.message ?? 'is not valid';
    const pattern = /^must match pattern "(.*)"$/.exec(raw);
    let message = pattern ? patternWords(pattern[1]) : raw;
    if (keyword === 'additionalProperties') message = 'is not a field of this operation: remove it';
    if (keyword === 'enum') message = raw.replace('must be equal to one of the allowed values: ', 'must be one of: ');
    const entry = byField.get(field) ?? { messages: [], precise: false };
    const combinator = keyword === 'oneOf' || keyword === 'anyOf' || keyword === 'if';
    if (pattern) {
      // the pattern's words already say the length: drop minLength/maxLength noise on the same field
      entry.messages = entry.messages.filter((m) => !/characters$/.test(m));
    } else if (/^must NOT have (fewer|more) than \d+ characters$/.test(message) && entry.precise) continue;
    if (!combinator && !entry.messages.includes(message)) entry.messages.push(message);
    if (combinator && entry.messages.length === 0) entry.messages.push('does not match any of the accepted shapes');
    entry.precise ||= Boolean(pattern);
    byField.set(field, entry);
  }
  return [...byField].map(([field, { messages }]) => ({ field: field || undefined, message: messages.join('; ') }));
}

export function notFoundHandler(): RequestHandler {
  return (req, _res, next) => next(new DomainError('NOT_FOUND', `No route ${req.method} ${req.path}`));
}

/** pg's words for a connection that is gone: closed mid-query, or a client broken by an earlier connection error. */
const CONNECTION_GONE = /Connection terminated|connection error and is not queryable/i;
/** A Node system error's code (ECONNRESET, EPIPE, ETIMEDOUT): no SQLSTATE class starts with E. */
const SYSTEM_ERROR = /^E[A-Z]+$/;

/** Sequelize's errors for a connection it could not make or lend. */
const CONNECTION_ERRORS = new Set([
  'SequelizeConnectionError',
  'SequelizeConnectionRefusedError',
  'SequelizeConnectionAcquireTimeoutError',
  'SequelizeHostNotReachableError',
]);

/**
 * A connection PostgreSQL took away: 57P01..03 (shutdown, crash, still starting), class 08, a socket error instead
 * of an SQLSTATE (ECONNRESET, EPIPE: the server went away without its goodbye, as under load), or no code and pg's
 * words for a closed socket. The same rule as data/pg-query.ts's for the statements it runs.
 */
function isConnectionGone(e: { code?: unknown; message?: unknown } | undefined): boolean {
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code) return /^08|^57P0[123]$/.test(code) || SYSTEM_ERROR.test(code);
  return CONNECTION_GONE.test(String(e?.message ?? ''));
}

function isDatabaseDown(err: unknown): boolean {
  const name = (err as { name?: string })?.name ?? '';
  if (CONNECTION_ERRORS.has(name)) return true;
  // a query Sequelize ran on a connection that went away (the pg error is its parent)
  if (name === 'SequelizeDatabaseError') return isConnectionGone((err as { parent?: { code?: unknown } }).parent);
  // pg's own error, unwrapped: a connection the pool was still setting up when PostgreSQL began stopping (the
  // start-up's SET failed with 57P01), or one it handed out broken ('Error', no code)
  if (name === 'error' || name === 'Error') return isConnectionGone(err as { code?: unknown; message?: unknown });
  return false;
}

/** The last middleware: everything leaves in the one envelope; internals are logged, never returned. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof DomainError) return sendError(res, err);
    const mapped = fromFrameworkError(err as ValidatorError, req.path);
    if (mapped) return sendError(res, mapped, (err as ValidatorError).omittedErrors ?? 0);
    if (isDatabaseDown(err)) {
      logger.error('database unavailable', { requestId: res.locals.requestId, error: (err as Error).message });
      return sendError(
        res,
        new DomainError('SERVICE_UNAVAILABLE', 'A dependency of the service is unavailable; retry later', [], {
          'Retry-After': '5',
        }),
      );
    }
    logger.error('unhandled error', {
      requestId: res.locals.requestId,
      route: req.path,
      error: (err as Error)?.message,
      stack: (err as Error)?.stack,
    });
    sendError(res, new DomainError('INTERNAL_ERROR', 'An internal error occurred'));
  };
}
