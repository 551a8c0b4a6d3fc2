/**
 * The nesting depth bound of JSON request bodies. JSON.parse itself copes with deep input, but everything after it
 * (the request validator, JSON Schema checks, serialisers) recurses, so 10,000 nested arrays would overflow the stack
 * and answer 500. The raw body is scanned once, in linear time, before it is parsed; deeper bodies are refused with
 * 400 INVALID_REQUEST.
 */
export const MAX_JSON_DEPTH = 64;

export class JsonTooDeepError extends Error {
  readonly type = 'entity.too.deep';
  readonly status = 400;
  constructor(public readonly maxDepth: number) {
    super(`The request body is nested deeper than ${maxDepth} levels`);
  }
}

/** The deepest nesting of objects and arrays in a JSON text (strings skipped), stopping early past `max`. */
export function jsonDepthExceeds(buf: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i += 1) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c)
        i += 1; // backslash: skip the escaped byte
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return false;
}

/** body-parser `verify` hook: throws JsonTooDeepError for a body nested deeper than MAX_JSON_DEPTH. */
export function verifyJsonDepth(_req: unknown, _res: unknown, buf: Buffer): void {
  if (jsonDepthExceeds(buf, MAX_JSON_DEPTH)) throw new JsonTooDeepError(MAX_JSON_DEPTH);
}
