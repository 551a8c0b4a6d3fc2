/**
 * A small structured logger (one JSON line per event on stderr). Callers pass fields, never request bodies or
 * headers, so no key, signature or secret reaches the log.
 */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(opts: { silent?: boolean } = {}): Logger {
  const write = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (opts.silent) return;
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
  };
  return { info: write('info'), warn: write('warn'), error: write('error') };
}
