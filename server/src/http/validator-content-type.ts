import type { RequestHandler } from 'express';
import type { RouteMatch, SpecPaths } from './operation-matcher';

/**
 * The Content-Type header as express-openapi-validator reads it, reduced to what its validation depends on.
 *
 * The library keys the validator it compiles for a request by method, route and the request's whole Content-Type
 * header, parameters included, and keeps each one for the process's life: every new key is an Ajv schema added and
 * compiled (~40 ms of CPU on this machine, and memory never given back). A stranger sending
 * `application/json; n=1`, `; n=2`, ... to a route with a body, or any header at all to a route without one, made us
 * compile and keep a validator per request. What the library does with the header: a route without a request body
 * ignores it; a route with one looks for the header's media type among the declared ones (its parameters only ever
 * break an exact match, after which the library falls back to the bare media type). So:
 *
 * - an operation without a request body: the header is removed (the library then validates exactly as before);
 * - a media type the operation declares (`application/json`, in any case, with any parameters): the header becomes the
 *   bare media type, which selects the same schema;
 * - anything else is left as it is: the library refuses it (415) without compiling or keeping anything, and its
 *   message names the header as sent.
 *
 * Runs after body-parser (which has read the charset), before the validator; `res.locals.route` is the operation the
 * access policy matched. Test: security/abuse-bounds.test.ts ("ever new Content-Type headers").
 */
export function boundValidatorContentType(paths: SpecPaths): RequestHandler {
  /** operationId → the media types its request body declares (lower case); empty: no request body. */
  const declared = new Map<string, Set<string>>();
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      const { operationId, requestBody } = (op ?? {}) as {
        operationId?: string;
        requestBody?: { content?: Record<string, unknown> };
      };
      if (!operationId) continue;
      // a request body whose content is not readable here (a $ref) is left to the library untouched
      if (requestBody && !requestBody.content) continue;
      declared.set(operationId, new Set(Object.keys(requestBody?.content ?? {}).map((t) => t.toLowerCase())));
    }
  }
  return (req, res, next) => {
    const header = req.headers['content-type'];
    const operationId = (res.locals.route as RouteMatch | null | undefined)?.operation?.operationId;
    const types = header === undefined || !operationId ? undefined : declared.get(operationId);
    if (types && types.size === 0) delete req.headers['content-type'];
    else if (types && header !== undefined) {
      const mediaType = header.split(';')[0]!.trim().toLowerCase();
      if (types.has(mediaType)) req.headers['content-type'] = mediaType;
    }
    next();
  };
}
