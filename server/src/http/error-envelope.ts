import type { Response } from 'express';
import { DomainError, type ErrorCode, type ErrorDetail } from '../domain/errors';
import { ERROR_STATUS } from './error-status';

/** The one error envelope of every endpoint: {ok:false, error:{code, message, details, requestId}}. */
export interface ErrorBody {
  ok: false;
  error: { code: ErrorCode; message: string; details: ErrorDetail[]; requestId: string };
}

export function errorBody(code: ErrorCode, message: string, details: ErrorDetail[], requestId: string): ErrorBody {
  return { ok: false, error: { code, message, details, requestId } };
}

export function sendError(res: Response, err: DomainError): void {
  const requestId = String(res.locals.requestId ?? '');
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.locals.errorCode = err.code;
  res.status(ERROR_STATUS[err.code]).json(errorBody(err.code, err.message, err.details, requestId));
}
