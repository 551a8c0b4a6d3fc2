import type { Response } from 'express';
import { DomainError, type ErrorCode, type ErrorDetail } from '../domain/errors';
import { ERROR_STATUS } from './error-status';

/** The one error envelope of every endpoint: {ok:false, error:{code, message, details, requestId, detailsTotal?}}. */
export interface ErrorBody {
  ok: false;
  error: { code: ErrorCode; message: string; details: ErrorDetail[]; requestId: string; detailsTotal?: number };
}

/** At most this many `details` in an answer (issue #29: a refusal's size never grows with what the caller sent). */
export const MAX_ERROR_DETAILS = 20;
/** Longest `details[].field` (the contract's ErrorDetail.field maxLength) and `details[].message`, in characters. */
const MAX_FIELD_CHARS = 512;
const MAX_DETAIL_MESSAGE_CHARS = 1024;
/** Longest `error.message`, in characters. */
const MAX_MESSAGE_CHARS = 8192;

const clip = (s: string, max: number) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`);
const clipDetail = (d: ErrorDetail): ErrorDetail => {
  if ((d.field === undefined || d.field.length <= MAX_FIELD_CHARS) && d.message.length <= MAX_DETAIL_MESSAGE_CHARS)
    return d;
  return {
    ...d,
    ...(d.field === undefined ? {} : { field: clip(d.field, MAX_FIELD_CHARS) }),
    message: clip(d.message, MAX_DETAIL_MESSAGE_CHARS),
  };
};

/**
 * The envelope, bounded: the first MAX_ERROR_DETAILS details (each field and message clipped), and when there were
 * more, `detailsTotal`: how many problems were found in all (`omitted` counts those the caller never listed).
 */
export function errorBody(
  code: ErrorCode,
  message: string,
  details: ErrorDetail[],
  requestId: string,
  omitted = 0,
): ErrorBody {
  const total = details.length + omitted;
  const listed = details.slice(0, MAX_ERROR_DETAILS).map(clipDetail);
  return {
    ok: false,
    error: {
      code,
      message: clip(message, MAX_MESSAGE_CHARS),
      details: listed,
      requestId,
      ...(total > listed.length ? { detailsTotal: total } : {}),
    },
  };
}

export function sendError(res: Response, err: DomainError, omittedDetails = 0): void {
  const requestId = String(res.locals.requestId ?? '');
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.locals.errorCode = err.code;
  res.status(ERROR_STATUS[err.code]).json(errorBody(err.code, err.message, err.details, requestId, omittedDetails));
}
