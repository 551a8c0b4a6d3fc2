import type { RequestHandler } from 'express';
import type { Metrics } from '../metrics/registry';
import { methodLabel } from './route-label';

/**
 * Counts every request by method, route template (never the raw path, so ids and random URLs do not explode
 * cardinality: see route-label.ts) and status, with its latency; error responses also by contract code.
 */
export function requestMetrics(metrics: Metrics, routeOf: (path: string) => string): RequestHandler {
  return (req, res, next) => {
    const end = metrics.httpLatency.startTimer();
    res.on('finish', () => {
      const route = (res.locals.routeTemplate as string | undefined) ?? routeOf(req.path);
      const labels = { method: methodLabel(req.method), route, status: String(res.statusCode) };
      end(labels);
      metrics.httpRequests.inc(labels);
      if (res.statusCode >= 400)
        metrics.httpErrors.inc({ route, code: String(res.locals.errorCode ?? res.statusCode) });
      if (res.statusCode === 401 || res.statusCode === 403)
        metrics.authFailures.inc({ reason: String(res.locals.errorCode ?? res.statusCode) });
    });
    next();
  };
}
