/**
 * A small structured logger (one JSON line per event on stderr). Callers pass fields, never request bodies or
 * headers, so no key, signature or secret reaches the log. LOG_LEVEL picks the lowest level written (default info);
 * `debug` adds the facilitator's per-payment decisions and every worker run.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function createLogger(opts: { silent?: boolean; level?: LogLevel } = {}): Logger {
  const lowest = LOG_LEVELS.indexOf(opts.level ?? 'info');
  const write = (level: LogLevel) => {
    if (opts.silent || LOG_LEVELS.indexOf(level) < lowest) return () => undefined;
    return (msg: string, fields: Record<string, unknown> = {}) => {
      process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
    };
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}
