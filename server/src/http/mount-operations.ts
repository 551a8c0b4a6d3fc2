import express, { type Router } from 'express';
import type { Handlers, OperationId, HandlerContext } from './operation-types';
import type { Principal } from '../domain/auth/principal';
import { markStage } from './server-timing';

interface SpecOperation {
  operationId: string;
  responses: Record<string, { content?: Record<string, unknown> }>;
}
type SpecPaths = Record<string, Record<string, SpecOperation>>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/**
 * Mounts one route per operation of the bundled spec onto the handler object. The lookup is by operationId through
 * the typed `Handlers` object; nothing is resolved by file name. Who may call it was decided before the body was
 * parsed (access-policy.ts); the handler runs with the caller's principal.
 */
export function mountOperations(spec: { paths: SpecPaths }, handlers: Handlers): Router {
  const router = express.Router();
  for (const [path, item] of Object.entries(spec.paths)) {
    const expressPath = path.replace(/\{([^}]+)\}/g, ':$1');
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const handler = handlers[op.operationId as OperationId] as unknown as (
        ctx: HandlerContext<OperationId>,
      ) => Promise<{ status: number; body: unknown; headers?: Record<string, string> }>;
      if (!handler) throw new Error(`no handler for operation ${op.operationId}`);
      router[method](expressPath, async (req, res, next) => {
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
            res
              .type(Object.keys(op.responses[String(result.status)]?.content ?? {})[0] ?? 'text/plain')
              .send(result.body);
          else res.json(result.body);
        } catch (err) {
          next(err);
        }
      });
    }
  }
  return router;
}
