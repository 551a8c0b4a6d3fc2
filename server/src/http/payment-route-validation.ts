import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { RouteMatch } from './operation-matcher';

/**
 * A route-matched fast path through express-openapi-validator for the verify and settle routes (issue #31: the
 * invalid-signature refusal's CPU; scripts/bench/PROFILE.md "Verify (session 9)").
 *
 * The library runs four middlewares per request before its validation proper: path parameters, metadata (its
 * `lookupRoute` over the route map), security and multipart, each behind a promise of its spec (a microtask each), then
 * its request validator parses the Content-Type and builds the cache key of the route's compiled middleware. For
 * the four hot operations all of that resolves, for a given exact path and Content-Type header, to the same thing
 * every time: the same `req.openapi` and the same compiled middleware (the library caches it per method, route and
 * content type). So the first request of a (path, Content-Type) pair goes through the library's whole chain, and this
 * file remembers what it resolved to; the later ones set the same `req.openapi` and call the SAME compiled middleware
 * (parameter handling, the same Ajv functions, the same error texts: it is the library's own code, not a copy).
 *
 * Taken only when nothing the skipped steps do could differ: POST, the request's URL exactly the operation's path (no
 * query string, no trailing slash, same case), a JSON Content-Type (never multipart: the multipart step stays), the
 * operation without path parameters, and the library's security step off (validateSecurity: false in app.ts).
 * Everything else goes through the library's chain as before.
 */
export const FAST_VALIDATION_OPERATIONS = new Set([
  'verifyPayment',
  'settlePayment',
  'verifyPaymentPayload',
  'settlePaymentPayload',
]);

type Built = (req: Request, res: Response, next: NextFunction) => void;
type Learn = (req: Request, built: Built) => void;
interface Learned {
  openapi: Record<string, unknown>;
  built: Built;
}

/** res.locals key through which a request taking the library's chain reports the compiled middleware it ran. */
const LEARN = Symbol('learnValidatorMiddleware');
/** A JSON media type body-parser parsed (application/json, application/*+json), never multipart. */
const JSON_MEDIA = /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i;

let hooked: boolean | null = null;

/**
 * Wraps the library's `RequestValidator.prototype.buildMiddleware` once per process, so that the compiled middleware
 * of a route and content type tells the request that runs it (when the request asks, through res.locals) what it is.
 * False when the library's layout is not the expected one: then no fast path is taken.
 */
function hookLibrary(): boolean {
  if (hooked !== null) return hooked;
  hooked = false;
  let proto: { buildMiddleware?: (...args: unknown[]) => Built };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    proto = require('express-openapi-validator/dist/middlewares/openapi.request.validator').RequestValidator.prototype;
  } catch {
    return false;
  }
  const original = proto.buildMiddleware;
  if (typeof original !== 'function') return false;
  proto.buildMiddleware = function buildMiddlewareReporting(...args: unknown[]) {
    const built = original.apply(this, args);
    return (req: Request, res: Response, next: NextFunction) => {
      const learn = (res.locals as Record<symbol, unknown> | undefined)?.[LEARN] as Learn | undefined;
      if (learn) learn(req, built);
      return built(req, res, next);
    };
  };
  hooked = true;
  return true;
}

/**
 * The validator's chain (`chain`: the library's middlewares, composed) with the fast path in front of it for the
 * operations of FAST_VALIDATION_OPERATIONS among `paths` (the spec's paths: those with a parameter never qualify).
 */
export function paymentRouteValidation(
  chain: RequestHandler,
  paths: Record<string, Record<string, { operationId?: string; parameters?: unknown[] } | unknown>>,
): RequestHandler {
  const fastPaths = new Set<string>();
  for (const [template, item] of Object.entries(paths)) {
    const post = (item as Record<string, { operationId?: string } | undefined>).post;
    if (post?.operationId && FAST_VALIDATION_OPERATIONS.has(post.operationId) && !template.includes('{'))
      fastPaths.add(template);
  }
  if (fastPaths.size === 0 || !hookLibrary()) return chain;
  const learned = new Map<string, Learned>();
  return (req, res, next) => {
    const url = req.originalUrl;
    const contentType = req.headers['content-type'];
    if (
      req.method !== 'POST' ||
      !fastPaths.has(url) ||
      contentType === undefined ||
      !JSON_MEDIA.test(contentType) ||
      !FAST_VALIDATION_OPERATIONS.has((res.locals.route as RouteMatch | null | undefined)?.operation?.operationId ?? '')
    )
      return chain(req, res, next);
    const key = `${url} ${contentType}`;
    const hit = learned.get(key);
    if (!hit) {
      (res.locals as Record<symbol, unknown>)[LEARN] = ((r: Request, built: Built) => {
        const openapi = (r as { openapi?: Record<string, unknown> }).openapi;
        if (r === req && openapi && learned.size < 64) learned.set(key, { openapi: { ...openapi }, built });
      }) satisfies Learn;
      return chain(req, res, next);
    }
    // What the library's metadata step sets for this route (its pathParams empty: the path has none).
    (req as { openapi?: unknown }).openapi = { ...hit.openapi, pathParams: {} };
    req.params = {};
    try {
      hit.built(req, res, next);
    } catch (err) {
      next(err);
    }
  };
}
