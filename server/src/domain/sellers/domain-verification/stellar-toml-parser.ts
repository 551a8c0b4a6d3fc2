import { DomainCheckError } from './errors';

/**
 * A small, strict parser for the top level of a SEP-1 stellar.toml: the `key = value` pairs before the first
 * `[table]` / `[[array of tables]]` header. Tables are not parsed at all (in TOML nothing after the first header is
 * top level), so unusual syntax inside [[CURRENCIES]] or [DOCUMENTATION] cannot fail a verification.
 *
 * Supported at the top level: comments; bare, quoted and dotted keys; basic, literal and multi-line strings with
 * TOML escapes; arrays (multi-line, nested, trailing comma, comments); inline tables; other scalars (numbers,
 * booleans, dates) kept as raw text. Duplicate keys and anything malformed are errors (`invalid_toml`, with a line
 * number and never the offending text).
 *
 * Why not a library: the parsers present in node_modules (toml via @stellar/stellar-sdk, smol-toml via lerna/nx)
 * are not dependencies of the server package, and only two top-level keys are needed.
 */
export type TomlValue = string | TomlValue[] | TomlOther;

/** A value we parse but do not interpret: a number, boolean, date or inline table. */
export interface TomlOther {
  kind: 'scalar' | 'inline_table';
  raw?: string;
}

const BARE_KEY = /[A-Za-z0-9_-]/;
/** Booleans, integers (dec/hex/oct/bin), floats incl. inf/nan, offset/local date-times, dates and times. */
const SCALAR =
  /^(?:true|false|[+-]?(?:inf|nan)|[+-]?\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d[\d_]*)?|0x[\dA-Fa-f_]+|0o[0-7_]+|0b[01_]+|\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2})?)?|\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)$/;

export function parseStellarTomlTopLevel(text: string): Map<string, TomlValue> {
  return new TopLevelParser(text).parse();
}

class TopLevelParser {
  private pos = 0;
  private readonly values = new Map<string, TomlValue>();

  constructor(private readonly src: string) {
    if (this.src.charCodeAt(0) === 0xfeff) this.pos = 1;
  }

  parse(): Map<string, TomlValue> {
    for (;;) {
      this.skipBlankLinesAndComments();
      if (this.eof() || this.peek() === '[') return this.values;
      const key = this.parseKey();
      this.skipSpaces();
      this.expect('=');
      this.skipSpaces();
      const value = this.parseValue();
      if (this.values.has(key)) this.fail(`duplicate key`);
      this.values.set(key, value);
      this.skipSpaces();
      this.skipComment();
      if (!this.eof() && !this.atNewline()) this.fail('expected end of line after value');
    }
  }

  private parseKey(): string {
    const parts = [this.parseSimpleKey()];
    for (;;) {
      this.skipSpaces();
      if (this.peek() !== '.') break;
      this.pos++;
      this.skipSpaces();
      parts.push(this.parseSimpleKey());
    }
    return parts.join('.');
  }

  private parseSimpleKey(): string {
    const c = this.peek();
    if (c === '"') return this.parseBasicString();
    if (c === "'") return this.parseLiteralString();
    const start = this.pos;
    while (!this.eof() && BARE_KEY.test(this.peek())) this.pos++;
    if (this.pos === start) this.fail('expected a key');
    return this.src.slice(start, this.pos);
  }

  private parseValue(): TomlValue {
    const c = this.peek();
    if (this.src.startsWith('"""', this.pos)) return this.parseMultilineString('"""');
    if (this.src.startsWith("'''", this.pos)) return this.parseMultilineString("'''");
    if (c === '"') return this.parseBasicString();
    if (c === "'") return this.parseLiteralString();
    if (c === '[') return this.parseArray();
    if (c === '{') return this.parseInlineTable();
    return this.parseOtherScalar();
  }

  private parseArray(): TomlValue[] {
    this.expect('[');
    const items: TomlValue[] = [];
    for (;;) {
      this.skipBlankLinesAndComments();
      if (this.peek() === ']') break;
      items.push(this.parseValue());
      this.skipBlankLinesAndComments();
      if (this.peek() === ',') {
        this.pos++;
        continue;
      }
      if (this.peek() !== ']') this.fail("expected ',' or ']' in array");
    }
    this.pos++;
    return items;
  }

  private parseInlineTable(): TomlOther {
    this.expect('{');
    this.skipSpaces();
    const keys = new Set<string>();
    if (this.peek() === '}') {
      this.pos++;
      return { kind: 'inline_table' };
    }
    for (;;) {
      this.skipSpaces();
      const key = this.parseKey();
      if (keys.has(key)) this.fail('duplicate key in inline table');
      keys.add(key);
      this.skipSpaces();
      this.expect('=');
      this.skipSpaces();
      this.parseValue();
      this.skipSpaces();
      if (this.peek() === ',') {
        this.pos++;
        continue;
      }
      this.expect('}');
      return { kind: 'inline_table' };
    }
  }

  /** Numbers, booleans and dates: taken as raw text up to the next delimiter; never interpreted. */
  private parseOtherScalar(): TomlOther {
    const start = this.pos;
    while (!this.eof() && !/[,\]}#\r\n]/.test(this.peek())) this.pos++;
    const raw = this.src.slice(start, this.pos).trimEnd();
    this.pos = start + raw.length;
    if (!SCALAR.test(raw)) this.fail('expected a value (strings must be quoted)');
    return { kind: 'scalar', raw };
  }

  private parseBasicString(): string {
    this.expect('"');
    let out = '';
    for (;;) {
      if (this.eof() || this.atNewline()) this.fail('unterminated string');
      const c = this.src[this.pos++];
      if (c === '"') return out;
      if (c === '\\') out += this.parseEscape();
      else out += this.checkedChar(c);
    }
  }

  private parseLiteralString(): string {
    this.expect("'");
    const start = this.pos;
    for (;;) {
      if (this.eof() || this.atNewline()) this.fail('unterminated string');
      const c = this.src[this.pos++];
      if (c === "'") return this.src.slice(start, this.pos - 1);
      this.checkedChar(c);
    }
  }

  private parseMultilineString(delimiter: '"""' | "'''"): string {
    this.pos += 3;
    if (this.src.startsWith('\r\n', this.pos)) this.pos += 2;
    else if (this.peek() === '\n') this.pos++;
    let out = '';
    for (;;) {
      if (this.eof()) this.fail('unterminated multi-line string');
      if (this.src.startsWith(delimiter, this.pos)) {
        // Up to two quotes may sit right before the closing delimiter.
        let extra = 0;
        while (extra < 2 && this.src[this.pos + 3 + extra] === delimiter[0]) extra++;
        out += delimiter[0].repeat(extra);
        this.pos += 3 + extra;
        return out;
      }
      const c = this.src[this.pos++];
      if (delimiter === '"""' && c === '\\') {
        // A line-ending backslash trims the newline and leading whitespace that follow.
        const rest = /^[ \t]*\r?\n[ \t\r\n]*/.exec(this.src.slice(this.pos));
        if (rest) this.pos += rest[0].length;
        else out += this.parseEscape();
      } else if (c === '\n' || c === '\t' || (c === '\r' && this.peek() === '\n')) {
        out += c;
      } else {
        out += this.checkedChar(c);
      }
    }
  }

  private parseEscape(): string {
    const c = this.src[this.pos++];
    const simple: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', e: '\x1b', '"': '"', '\\': '\\' };
    if (c !== undefined && c in simple) return simple[c];
    const hexLength = c === 'u' ? 4 : c === 'U' ? 8 : c === 'x' ? 2 : 0;
    const hex = this.src.slice(this.pos, this.pos + hexLength);
    if (hexLength === 0 || !/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== hexLength) this.fail('invalid escape');
    const code = parseInt(hex, 16);
    if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) this.fail('invalid unicode escape');
    this.pos += hexLength;
    return String.fromCodePoint(code);
  }

  /** Control characters other than tab are not allowed inside TOML strings. */
  private checkedChar(c: string): string {
    const code = c.charCodeAt(0);
    if ((code < 0x20 && c !== '\t') || code === 0x7f) this.fail('control character in string');
    return c;
  }

  private skipBlankLinesAndComments(): void {
    for (;;) {
      this.skipSpaces();
      this.skipComment();
      if (!this.atNewline()) return;
      this.skipNewline();
    }
  }

  private skipSpaces(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.pos++;
  }

  private skipComment(): void {
    if (this.peek() !== '#') return;
    while (!this.eof() && !this.atNewline()) this.checkedChar(this.src[this.pos++]);
  }

  private atNewline(): boolean {
    return this.peek() === '\n' || this.src.startsWith('\r\n', this.pos);
  }

  private skipNewline(): void {
    this.pos += this.peek() === '\n' ? 1 : 2;
  }

  private expect(c: string): void {
    if (this.peek() !== c) this.fail(`expected '${c}'`);
    this.pos++;
  }

  private peek(): string {
    return this.src[this.pos] ?? '';
  }

  private eof(): boolean {
    return this.pos >= this.src.length;
  }

  private fail(what: string): never {
    const line = this.src.slice(0, this.pos).split('\n').length;
    throw new DomainCheckError('invalid_toml', `stellar.toml line ${line}: ${what}`);
  }
}
