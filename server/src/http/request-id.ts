import crypto from 'node:crypto';
import type { RequestHandler } from 'express';

/** Every request gets an id (a sane incoming X-Request-Id is kept), echoed in the header and in error bodies. */
export const requestId: RequestHandler = (req, res, next) => {
  const incoming = req.get('x-request-id');
  const id = incoming && /^[A-Za-z0-9._:-]{8,128}$/.test(incoming) ? incoming : `req_${crypto.randomUUID()}`;
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};
