import type { NextFunction, Request, RequestHandler, Response } from 'express';

const noop = () => undefined;

/**
 * Several root-mounted middlewares as ONE Express layer. Express 5's router pays per layer on every request (its
 * `next`, the layer's path match, the params step and the promise check): the app had ~20 root layers before the
 * operation's handler, which showed as 6-9 % of a refused verify's CPU (scripts/bench/PROFILE.md "Verify (session
 * 8)"). Each handler is called as Express's router calls a request handler (router's `Layer.handleRequest`):
 *
 * - `next()`, `next('route')` and a falsy value go on to the next handler (a root `use` layer has no route to skip);
 * - `next('router')` and `next(err)` leave the composition with that value, so the app's router skips to its error
 *   handlers (or leaves) exactly as before;
 * - a synchronous throw, and a returned promise that rejects, become `next(err)` (a rejection without a reason becomes
 *   `new Error('Rejected promise')`, as Express does).
 *
 * Only for handlers mounted at the root with `app.use(handler)`: a handler mounted at a path (`app.use('/docs', ...)`)
 * needs the router's path trimming and keeps its own layer.
 */
export function composeMiddleware(...handlers: RequestHandler[]): RequestHandler {
  if (handlers.length === 1) return handlers[0];
  for (const h of handlers)
    if (h.length > 3) throw new Error('composeMiddleware: request handlers only (no error handler)');
  return function composed(req: Request, res: Response, out: NextFunction) {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err && err !== 'route') return out(err);
      if (i >= handlers.length) return out();
      const handler = handlers[i++];
      try {
        const ret = handler(req, res, step) as unknown;
        if (ret !== null && typeof ret === 'object' && typeof (ret as PromiseLike<unknown>).then === 'function') {
          (ret as PromiseLike<unknown>).then(noop, (e: unknown) => step(e || new Error('Rejected promise')));
        }
      } catch (e) {
        step(e);
      }
    };
    step();
  };
}
