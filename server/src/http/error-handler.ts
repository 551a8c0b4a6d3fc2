import type { ErrorRequestHandler, RequestHandler } from 'express';
import { DomainError, type ErrorCode, type ErrorDetail } from '../domain/errors';
import { sendError } from './error-envelope';
import type { Logger } from '../logger';

interface ValidatorError {
  status?: number;
  statusCode?: number;
  type?: string;
  message?: string;
  errors?: Array<{ path?: string; message?: string; errorCode?: string }>;
}

const FACILITATOR_PATHS = new Set(['/v1/verify', '/v1/settle']);

/** Maps body-parser and express-openapi-validator errors into the domain error that the envelope carries. */
function fromFrameworkError(err: ValidatorError, path: string): DomainError | null {
  if (err.type === 'entity.parse.failed') return new DomainError('INVALID_REQUEST', 'The request body is not valid JSON');
  if (err.type === 'entity.too.deep') return new DomainError('INVALID_REQUEST', err.message ?? 'The request body is nested too deeply');
  if (err.type === 'entity.too.large' || err.status === 413) return new DomainError('PAYLOAD_TOO_LARGE', 'The request body is too large');
  // body-parser: `application/json; charset=latin1` (charset.unsupported), an unknown Content-Encoding
  // (encoding.unsupported): the body cannot be read as UTF-8 JSON.
  if (err.type === 'charset.unsupported' || err.type === 'encoding.unsupported') {
    return new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported charset or content encoding: send application/json in UTF-8 (no Content-Encoding)');
  }
  const status = err.status ?? err.statusCode;
  // Any other client error of the body reader (http-errors with expose: an aborted or mis-sized body, ...).
  if (status && status >= 400 && status < 500 && !Array.isArray(err.errors) && (err as { expose?: unknown }).expose === true) {
    return new DomainError(status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'INVALID_REQUEST', 'The request body could not be read');
  }
  if (!status || !Array.isArray(err.errors)) return null;
  const details: ErrorDetail[] = err.errors.map((e) => ({
    field: (e.path ?? '').replace(/^\/(body|query|params|headers)\/?/, '').replace(/\//g, '.') || undefined,
    message: e.message ?? 'invalid',
  }));
  let code: ErrorCode;
  if (status === 404) code = 'NOT_FOUND';
  else if (status === 405) code = 'METHOD_NOT_ALLOWED';
  else if (status === 415) code = 'UNSUPPORTED_MEDIA_TYPE';
  else if (status === 400) code = FACILITATOR_PATHS.has(path) ? 'INVALID_PAYMENT_PAYLOAD' : 'INVALID_REQUEST';
  else if (status >= 500) return null; // a response that breaks the contract: a bug, reported as INTERNAL_ERROR
  else code = 'INVALID_REQUEST';
  const message = status === 404 ? `No route ${path}` : status === 405 ? 'Method not allowed on this route' : 'The request does not match the API contract';
  return new DomainError(code, message, details);
}

export function notFoundHandler(): RequestHandler {
  return (req, _res, next) => next(new DomainError('NOT_FOUND', `No route ${req.method} ${req.path}`));
}

function isDatabaseDown(err: unknown): boolean {
  const name = (err as { name?: string })?.name ?? '';
  if (name === 'SequelizeDatabaseError') {
    // a pooled connection that PostgreSQL closed while stopping (57P01..03, class 08, or a socket closed mid-query)
    const parent = (err as { parent?: { code?: unknown; message?: unknown } }).parent;
    const code = typeof parent?.code === 'string' ? parent.code : '';
    return /^08|^57P0[123]$/.test(code) || (!code && /Connection terminated/i.test(String(parent?.message ?? '')));
  }
  return name === 'SequelizeConnectionError' || name === 'SequelizeConnectionRefusedError' || name === 'SequelizeConnectionAcquireTimeoutError' || name === 'SequelizeHostNotReachableError';
}

/** The last middleware: everything leaves in the one envelope; internals are logged, never returned. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof DomainError) return sendError(res, err);
    const mapped = fromFrameworkError(err as ValidatorError, req.path);
    if (mapped) return sendError(res, mapped);
    if (isDatabaseDown(err)) {
      logger.error('database unavailable', { requestId: res.locals.requestId, error: (err as Error).message });
      return sendError(res, new DomainError('SERVICE_UNAVAILABLE', 'A dependency of the service is unavailable; retry later', [], { 'Retry-After': '5' }));
    }
    logger.error('unhandled error', { requestId: res.locals.requestId, route: req.path, error: (err as Error)?.message, stack: (err as Error)?.stack });
    sendError(res, new DomainError('INTERNAL_ERROR', 'An internal error occurred'));
  };
}
