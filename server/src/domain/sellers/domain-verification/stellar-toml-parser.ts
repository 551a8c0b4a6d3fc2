import { parse, TomlDate, TomlError } from 'smol-toml';
import { DomainCheckError } from './errors';

/**
 * The top level of a SEP-1 stellar.toml, read with `smol-toml` (TOML 1.0): the `key = value` pairs before the first
 * `[table]` / `[[array of tables]]` header. What the tables hold is never read, so unusual syntax inside
 * [[CURRENCIES]] or [DOCUMENTATION] cannot fail a verification: when the file does not parse, it is read again up
 * to the last header line at or above the error (then, if that cut falls inside a multi-line value, up to the one
 * before, at most MAX_CUTS times), and only an error in the top level is reported.
 *
 * Values: strings and arrays as such; numbers, booleans and dates as `{ kind: 'scalar', raw }` (raw: the value as
 * text, dates in ISO form); inline tables (and tables) as `{ kind: 'inline_table' }`, their keys also listed dotted
 * (`a.b = "x"` is key 'a.b'). Duplicate keys and anything malformed are errors (`invalid_toml`, with a line number
 * and never the offending text). Size bounds are the fetcher's (safe-fetcher.ts, 64 KiB by default).
 */
export type TomlValue = string | TomlValue[] | TomlOther;

/** A value we parse but do not interpret: a number, boolean, date or inline table. */
export interface TomlOther {
  kind: 'scalar' | 'inline_table';
  raw?: string;
}

/** A line that may open a table (`[name]` or `[[name]]`); inside a multi-line value it is not one, see above. */
const HEADER_LINE = /^[ \t]*\[.*\][ \t]*(?:#.*)?\r?$/;
const MAX_CUTS = 64;
/** smol-toml's words for "a value that is not TOML": the usual cause in a stellar.toml is an unquoted string. */
const WORDS: Record<string, string> = { 'invalid value': 'expected a value (strings must be quoted)' };

export function parseStellarTomlTopLevel(text: string): Map<string, TomlValue> {
  const values = new Map<string, TomlValue>();
  flatten(topLevelDocument(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text), '', values);
  return values;
}

function topLevelDocument(text: string): Record<string, unknown> {
  try {
    return parse(text);
  } catch (err) {
    if (!(err instanceof TomlError)) throw err;
    const lines = text.split('\n');
    let offset = 0;
    const starts = lines.map((line) => (offset += line.length + 1) - line.length - 1); // where each line begins
    for (let i = Math.min(err.line, lines.length) - 1, cuts = 0; i >= 0 && cuts < MAX_CUTS; i--) {
      if (!HEADER_LINE.test(lines[i])) continue;
      cuts += 1;
      try {
        return parse(text.slice(0, starts[i]));
      } catch {
        // the line sits inside a multi-line value: try the header line before it
      }
    }
    const words = /^Invalid TOML document: ([^\n]*)/.exec(err.message)?.[1] ?? 'not valid TOML';
    throw new DomainCheckError('invalid_toml', `stellar.toml line ${err.line}: ${WORDS[words] ?? words}`);
  }
}

function flatten(table: Record<string, unknown>, prefix: string, out: Map<string, TomlValue>): void {
  for (const [key, value] of Object.entries(table)) {
    const name = prefix ? `${prefix}.${key}` : key;
    out.set(name, toValue(value));
    if (isTable(value)) flatten(value, name, out);
  }
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof TomlDate);
}

function toValue(value: unknown): TomlValue {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(toValue);
  if (value instanceof TomlDate) return { kind: 'scalar', raw: value.toISOString() };
  if (isTable(value)) return { kind: 'inline_table' };
  return { kind: 'scalar', raw: String(value) };
}
