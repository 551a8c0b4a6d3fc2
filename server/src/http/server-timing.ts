import { performance } from 'node:perf_hooks';
import type { RequestHandler, Response } from 'express';

/**
 * SERVER_TIMING=true (measurement only, off by default): the response to a request that asks for it
 * (`X-Server-Timing: 1`) carries a `Server-Timing` header saying where its time went inside this process, so a load
 * generator can split a slow request's latency into its own lateness, the way to the service, each middleware stage
 * and the response write (scripts/bench-verify.ts, the half-rate run).
 * `recv;desc=<epoch ms>` is when the first middleware ran (Node's HTTP parser emits the request in the turn that read
 * its headers, so this is when the socket's data was read), then one `<stage>;dur=<ms>` per stage entered, in order,
 * each lasting until the next stage began; the last lasts until the headers are written. Off, nothing is wrapped and
 * no header is sent: timings describe the service's load and are not for every caller. On, a request that does not
 * ask costs a header lookup, and one no-op call per stage.
 */
export const SERVER_TIMING_REQUEST_HEADER = 'x-server-timing';
const MARKS = Symbol('server-timing marks');
type Marked = Response & { [MARKS]?: Array<[string, number]> };

/** Records that the request entered `stage` now (nothing when timing is off for this response). */
export function markStage(res: Response, stage: string): void {
  (res as Marked)[MARKS]?.push([stage, performance.now()]);
}

function header(marks: Array<[string, number]>, end: number): string {
  const start = marks[0][1];
  const parts = [`recv;desc="${(performance.timeOrigin + start).toFixed(3)}"`];
  for (let i = 0; i < marks.length; i++) {
    const until = i + 1 < marks.length ? marks[i + 1][1] : end;
    parts.push(`${marks[i][0]};dur=${(until - marks[i][1]).toFixed(3)}`);
  }
  return parts.join(', ');
}

/** The first middleware: opens the request's marks and writes the header when the response's headers are written. */
export const serverTimingStart: RequestHandler = (req, res, next) => {
  if (req.headers[SERVER_TIMING_REQUEST_HEADER] !== '1') return next();
  const marks: Array<[string, number]> = [['start', performance.now()]];
  (res as Marked)[MARKS] = marks;
  const writeHead = res.writeHead;
  res.writeHead = function timedWriteHead(this: Response, ...args: unknown[]) {
    if (!res.headersSent) res.setHeader('Server-Timing', header(marks, performance.now()));
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as typeof res.writeHead;
  next();
};

/** `handler`, marking its stage first when timing is on; itself when off. */
export function timedStage(enabled: boolean, stage: string, handler: RequestHandler): RequestHandler {
  if (!enabled) return handler;
  return (req, res, next) => {
    markStage(res, stage);
    return handler(req, res, next);
  };
}
