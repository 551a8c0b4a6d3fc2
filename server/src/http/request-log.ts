import type { RequestHandler } from 'express';
import type { Logger } from '../logger';
import { methodLabel } from './route-label';

/**
 * LOG_REQUESTS=true: one `request` line per finished request with its request id, method, route template (never the
 * raw path or query string, which can carry caller data), status, error code and duration. Headers and bodies are
 * never logged, so no API key, payment authorization or signature reaches the log through it.
 */
export function requestLog(logger: Logger, routeOf: (path: string) => string): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      logger.info('request', {
        requestId: res.locals.requestId as string | undefined,
        method: methodLabel(req.method),
        route: (res.locals.routeTemplate as string | undefined) ?? routeOf(req.path),
        status: res.statusCode,
        ...(res.statusCode >= 400 && res.locals.errorCode ? { code: String(res.locals.errorCode) } : {}),
        durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e4) / 100,
      });
    });
    next();
  };
}
