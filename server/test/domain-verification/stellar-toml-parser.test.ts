import { DomainCheckError } from '../../src/domain/sellers/domain-verification';
import { parseStellarTomlTopLevel } from '../../src/domain/sellers/domain-verification/stellar-toml-parser';

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof DomainCheckError ? err.reason : 'not a DomainCheckError';
  }
  return undefined;
}

describe('parseStellarTomlTopLevel', () => {
  it('reads top-level strings and arrays of a realistic SEP-1 file and ignores its tables', () => {
    const text = [
      '\ufeff# Stellar TOML for example.com',
      'VERSION="2.0.0"',
      'NETWORK_PASSPHRASE = "Public Global Stellar Network ; September 2015"',
      "FEDERATION_SERVER = 'https://example.com/federation' # literal string",
      'ACCOUNTS = [',
      '  "GAAA",  # first',
      '',
      "  'GBBB',",
      ']',
      'MARKETPLACE_VERIFICATION = "tok\\u0065n"',
      'SIGNING_KEY = "GSSS"',
      '',
      '[DOCUMENTATION]',
      'ORG_NAME = "Example"',
      'ACCOUNTS = ["not top level"]',
      '[[CURRENCIES]]',
      'code = "USD"',
      'this table uses syntax we never look at = !!!',
    ].join('\r\n');
    const values = parseStellarTomlTopLevel(text);
    expect(values.get('VERSION')).toBe('2.0.0');
    expect(values.get('FEDERATION_SERVER')).toBe('https://example.com/federation');
    expect(values.get('ACCOUNTS')).toEqual(['GAAA', 'GBBB']);
    expect(values.get('MARKETPLACE_VERIFICATION')).toBe('token');
    expect(values.has('ORG_NAME')).toBe(false);
  });

  it('accepts quoted keys, numbers, booleans, dates, inline tables, nested arrays and multi-line strings', () => {
    const values = parseStellarTomlTopLevel(
      [
        '"ACCOUNTS" = ["GAAA",]',
        'N = 42',
        'F = -1.5e3',
        'B = true',
        'D = 1979-05-27 07:32:00Z',
        'T = { a = 1, b = "x" }',
        'NESTED = [[1, 2], ["a"]]',
        'ML = """',
        'one \\',
        '   two"""',
        "LIT = '''C:\\path'''",
        'a.b = "dotted"',
      ].join('\n'),
    );
    expect(values.get('ACCOUNTS')).toEqual(['GAAA']);
    expect(values.get('N')).toEqual({ kind: 'scalar', raw: '42' });
    expect(values.get('D')).toEqual({ kind: 'scalar', raw: '1979-05-27T07:32:00.000Z' });
    expect(values.get('T')).toEqual({ kind: 'inline_table' });
    expect(values.get('ML')).toBe('one two');
    expect(values.get('LIT')).toBe('C:\\path');
    expect(values.get('a.b')).toBe('dotted');
  });

  it.each([
    ['an unterminated string', 'A = "abc\nB = 1'],
    ['an unterminated array', 'ACCOUNTS = ["GAAA"'],
    ['a missing comma in an array', 'ACCOUNTS = ["GAAA" "GBBB"]'],
    ['an unquoted string value', 'ACCOUNTS = [GAAA]'],
    ['a duplicate key', 'A = "1"\nA = "2"'],
    ['a key without a value', 'A =\nB = "x"'],
    ['two values on a line', 'A = "1" B = "2"'],
    ['a bad escape', 'A = "\\q"'],
    ['a control character in a string', 'A = "a\u0001b"'],
    ['a line without "="', 'JUST_A_KEY'],
  ])('rejects %s with invalid_toml', (_what, text) => {
    expect(reasonOf(() => parseStellarTomlTopLevel(text))).toBe('invalid_toml');
  });

  it('reports the line of a syntax error without echoing the file', () => {
    expect(() => parseStellarTomlTopLevel('A = "ok"\nSECRET_LOOKING = oops')).toThrow(
      'stellar.toml line 2: expected a value (strings must be quoted)',
    );
  });
});
