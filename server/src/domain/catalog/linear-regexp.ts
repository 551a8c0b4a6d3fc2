import { RE2JS } from 're2js';

/**
 * The regular-expression engine Ajv runs seller schemas' `pattern` / `patternProperties` on: RE2's algorithm in plain
 * JavaScript (`re2js`, no native build), matching in time linear in the input, never backtracking.
 *
 * Ajv's `code.regExp` contract: a function `(pattern, flags) => { test(s) }`, where `flags` is `"u"` (Ajv's
 * `unicodeRegExp`, on by default) or `""`. Semantics, decided:
 * - the pattern is read as ECMA-262 syntax (what JSON Schema specifies) and translated to RE2 syntax with
 *   `RE2JS.translateRegExp` (`\uXXXX` and `\u{...}` escapes, `(?<name>...)` groups), as the native `re2` package did;
 * - matching is by Unicode code point whatever the flag (an astral character is one `.`), as JavaScript with `u`;
 * - `test` is a search anywhere in the string (RegExp.prototype.test), anchored only by `^` / `$`; `$` matches at the
 *   very end only (no multiline);
 * - what RE2 cannot run in linear time is a compile error, so the schema is refused: look-ahead, look-behind,
 *   back-references, repeat counts above 1000;
 * - known differences from JavaScript's engine, both as with the native `re2`: `\s` is ASCII white space only
 *   (`[\t\n\f\r ]`, no `\v` nor Unicode spaces) and `.` excludes only `\n` (JavaScript also excludes `\r`, U+2028 and
 *   U+2029).
 *
 * Ajv deduplicates compiled patterns by `toString()` of the returned object across every schema it compiles, so the
 * string names the source pattern and flags exactly (two patterns must never share one).
 */
export type LinearRegExp = { test(s: string): boolean; toString(): string };

export function linearRegExp(pattern: string, flags: string): LinearRegExp {
  if (flags !== '' && flags !== 'u') throw new SyntaxError(`unsupported regular expression flags "${flags}"`);
  const re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  const key = `/${pattern}/${flags} (re2js)`;
  return { test: (s: string) => re.test(s), toString: () => key };
}

/** Ajv reads `code` only to emit standalone validator source, which this service never does. */
linearRegExp.code = 'linearRegExp';
