import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { templateRegex, type RouteMatch } from './operation-matcher';
import type { Handlers, OperationId, HandlerContext } from './operation-types';
import type { Principal } from '../domain/auth/principal';
import { markStage } from './server-timing';

interface SpecOperation {
  operationId: string;
  responses: Record<string, { content?: Record<string, unknown> }>;
}
type SpecPaths = Record<string, Record<string, SpecOperation>>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Handle = (req: Request, res: Response, next: NextFunction) => Promise<void>;

/** The route handler of one operation: runs its handler with the caller's principal and sends its answer. */
function operationRoute(path: string, op: SpecOperation, handlers: Handlers): Handle {
  const handler = handlers[op.operationId as OperationId] as unknown as (
    ctx: HandlerContext<OperationId>,
  ) => Promise<{ status: number; body: unknown; headers?: Record<string, string> }>;
  if (!handler) throw new Error(`no handler for operation ${op.operationId}`);
  return async (req, res, next) => {
    res.locals.routeTemplate = path;
    res.locals.operationId = op.operationId;
    markStage(res, 'handler');
    try {
      const principal = res.locals.principal as Principal;
      const result = await handler({
        params: req.params as never,
        query: (req.query ?? {}) as never,
        body: req.body as never,
        principal,
        requestId: String(res.locals.requestId),
        header: (name) => req.get(name),
        clientAddress: req.ip ?? req.socket.remoteAddress ?? 'unknown',
      });
      markStage(res, 'respond');
      for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
      res.status(result.status);
      if (typeof result.body === 'string')
        res.type(Object.keys(op.responses[String(result.status)]?.content ?? {})[0] ?? 'text/plain').send(result.body);
      else res.json(result.body);
    } catch (err) {
      next(err);
    }
  };
}

/**
 * Mounts one route per operation of the bundled spec onto the handler object. The lookup is by operationId through
 * the typed `Handlers` object; nothing is resolved by file name. Who may call it was decided before the body was
 * parsed (access-policy.ts); the handler runs with the caller's principal.
 *
 * Dispatch by the operation already matched: the access policy keeps the request's operation in
 * `res.locals.route` (operation-matcher.ts). For an operation whose path has no parameter, called with its own
 * method, and which no earlier route of Express's order would take first, its handler is called straight away
 * instead of Express's router trying the routes one by one (verify was the 22nd path of 41, /x402/verify the 35th).
 * The matcher is case-sensitive and Express's routes are not, so whatever the matcher finds Express finds too; every
 * other request (path parameters, HEAD, another case) goes through the router as before.
 */
export function mountOperations(spec: { paths: SpecPaths }, handlers: Handlers): RequestHandler {
  const router = express.Router();
  const direct = new Map<string, Handle>();
  const earlier: Array<{ method: string; re: RegExp }> = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    const expressPath = path.replace(/\{([^}]+)\}/g, ':$1');
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const route = operationRoute(path, op, handlers);
      router[method](expressPath, route);
      const literal = !path.includes('{');
      if (literal && !earlier.some((e) => e.method === method && e.re.test(path)))
        direct.set(`${method.toUpperCase()} ${op.operationId}`, route);
      earlier.push({ method, re: templateRegex(path) });
    }
  }
  return (req, res, next) => {
    const operationId = (res.locals.route as RouteMatch | null | undefined)?.operation?.operationId;
    const route = operationId === undefined ? undefined : direct.get(`${req.method} ${operationId}`);
    if (!route) return router(req, res, next);
    req.params = {};
    return route(req, res, next);
  };
}
