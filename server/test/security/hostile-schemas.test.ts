import { startTestService, type TestService } from '../support/test-service';
import { signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { catalog, draft, validate } from '../discovery/helpers';
import { checkJsonSchema, compileSchema, SCHEMA_LIMITS } from '../../src/domain/catalog/json-schema';

let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService();
  seller = await signUpSeller(svc.app);
});
afterAll(async () => {
  await svc.stop();
});

/** A schema nested `levels` JSON levels deep (one level per `items`), well inside the 64-level body bound. */
function nested(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < levels; i += 1) schema = { type: 'array', items: schema };
  return schema;
}

const manyProperties = Object.fromEntries(Array.from({ length: SCHEMA_LIMITS.nodes + 1 }, (_, i) => [`p${i}`, {}]));

/** Schemas an attacker sends to burn CPU or stack; each must be refused quickly with CATALOG_VALIDATION_FAILED. */
const HOSTILE: Array<[string, Record<string, unknown>]> = [
  ['a pattern built to backtrack that RE2 cannot run (look-ahead)', { type: 'string', pattern: '^(?=(a+)+$)a*$' }],
  ['a back-reference pattern', { type: 'string', pattern: '^(a+)\\1$' }],
  ['a pattern longer than the bound', { type: 'string', pattern: `^${'a?'.repeat(SCHEMA_LIMITS.patternLength)}$` }],
  ['a patternProperties key RE2 cannot run', { type: 'object', patternProperties: { '^(?!x)': { type: 'string' } } }],
  [
    'too many patternProperties',
    {
      type: 'object',
      patternProperties: Object.fromEntries(
        Array.from({ length: SCHEMA_LIMITS.patternProperties + 1 }, (_, i) => [`^p${i}$`, {}]),
      ),
    },
  ],
  ['deep nesting', nested(SCHEMA_LIMITS.depth)],
  ['a huge enum', { enum: Array.from({ length: SCHEMA_LIMITS.enumItems + 1 }, (_, i) => `v${i}`) }],
  ['too many nodes', { type: 'object', properties: manyProperties }],
  ['a $ref cycle through $defs', { $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }],
  ['a $ref to itself through allOf', { allOf: [{ $ref: '#' }] }],
  ['a $ref cycle through an anchor', { $defs: { a: { $anchor: 'loop', anyOf: [{ $ref: '#loop' }] } }, $ref: '#loop' }],
  ['a huge format name', { type: 'string', format: 'x'.repeat(SCHEMA_LIMITS.formatLength + 1) }],
  ['uniqueItems over objects without maxItems', { type: 'array', items: { type: 'object' }, uniqueItems: true }],
  [
    'an $id inside the schema (changes the base of its $refs)',
    { type: 'object', properties: { a: { $id: 'https://evil.example/x', type: 'string' } } },
  ],
];

describe('hostile catalog JSON Schemas are refused with CATALOG_VALIDATION_FAILED', () => {
  it.each(HOSTILE)('an inputSchema with %s is refused by validate and by catalog', async (_name, schema) => {
    const v = await validate(svc.app, null, { sellerId: seller.id, resource: draft(seller, { inputSchema: schema }) });
    expect(v.status).toBe(200);
    expect(v.body.ok).toBe(false);
    expect(v.body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'CATALOG_VALIDATION_FAILED', field: 'resource.inputSchema' }),
      ]),
    );
    const c = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resource: draft(seller, { inputSchema: schema }),
    });
    expect(c.status).toBe(400);
    expect(c.body.error.code).toBe('CATALOG_VALIDATION_FAILED');
  });

  it.each(HOSTILE)('a Bazaar schema with %s is refused', async (_name, schema) => {
    const v = await validate(svc.app, null, {
      sellerId: seller.id,
      resource: draft(seller, { extensions: { bazaar: { info: { input: { type: 'http' } }, schema } } }),
    });
    expect(v.status).toBe(200);
    expect(v.body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'CATALOG_VALIDATION_FAILED', field: 'resource.extensions.bazaar.schema' }),
      ]),
    );
  });

  it(
    'schemas inside the bounds are still accepted: recursion that consumes data, scalar uniqueItems, short ' +
      'patterns',
    () => {
      expect(
        checkJsonSchema({
          $defs: {
            node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } } },
          },
          $ref: '#/$defs/node',
        }),
      ).toBeNull();
      expect(checkJsonSchema({ type: 'array', items: { type: 'string' }, uniqueItems: true })).toBeNull();
      expect(checkJsonSchema({ type: 'string', pattern: '^[a-z]{2}-[A-Z]{2}$', format: 'email' })).toBeNull();
      expect(checkJsonSchema(nested(SCHEMA_LIMITS.depth - 1))).toBeNull();
    },
  );
});

describe('ReDoS from anonymous input', () => {
  const evil = {
    type: 'object',
    properties: { input: { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } } } },
  };

  it(
    'Bazaar info matched against a catastrophic pattern ("^(a+)+$" vs 40 a and "!") answers at once: the pattern ' +
      'runs on a linear engine (re2js)',
    async () => {
      const info = { input: { type: 'http', q: `${'a'.repeat(40)}!` } };
      const v = await validate(svc.app, null, {
        sellerId: seller.id,
        resource: draft(seller, { extensions: { bazaar: { info, schema: evil } } }),
      });
      expect(v.status).toBe(200);
      expect(v.body.ok).toBe(false);
      expect(v.body.errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            field: 'resource.extensions.bazaar.info',
            message: expect.stringContaining('must match pattern'),
          }),
        ]),
      );
    },
  );

  it(
    'the validator compiled from a seller schema uses a linear engine (a pattern only backtracking engines ' +
      'accept is refused)',
    () => {
      expect(checkJsonSchema({ type: 'string', pattern: '(a)\\1' })).toMatch(/not a valid JSON Schema/);
      expect(compileSchema(evil)({ input: { q: `${'a'.repeat(5000)}!` } })).toMatch(/must match pattern/);
    },
  );
});

describe('seller patterns on the linear engine (re2js, no native build)', () => {
  it(
    'a pattern another seller compiled first is never used for your schema (Ajv shares compiled patterns by ' +
      'their string form)',
    () => {
      // An attacker's match-anything pattern compiled first must not stand in for a later schema's own pattern.
      expect(compileSchema({ type: 'string', pattern: '.*' })('anything')).toBeNull();
      const lowerOnly = compileSchema({ type: 'string', pattern: '^[a-z]+$' });
      expect(lowerOnly('abc')).toBeNull();
      expect(lowerOnly('ABC')).toMatch(/must match pattern/);
      const keyed = compileSchema({
        type: 'object',
        patternProperties: { '^x-': { type: 'string' }, '^y-': { type: 'number' } },
      });
      expect(keyed({ 'x-a': 'ok', 'y-b': 1 })).toBeNull();
      expect(keyed({ 'y-b': 'not a number' })).toMatch(/must be number/);
    },
  );

  it(
    'patterns keep their JSON Schema (ECMA-262) meaning: \\u escapes, \\p{L}, an astral character is one ".", ' +
      'named groups, search not full match',
    () => {
      const ok = (pattern: string, value: string) => compileSchema({ type: 'string', pattern })(value) === null;
      expect(ok('^\\u00e9t\\u00e9$', 'été')).toBe(true);
      expect(ok('^\\u{1F600}$', '😀')).toBe(true);
      expect(ok('^\\p{L}+$', 'Zürich')).toBe(true);
      expect(ok('^\\p{L}+$', 'Zürich 1')).toBe(false);
      expect(ok('^.$', '😀')).toBe(true);
      expect(ok('^(?<cc>[A-Z]{2})-\\d{4}$', 'PT-1000')).toBe(true);
      expect(ok('b', 'abc')).toBe(true);
      expect(ok('abc$', 'abc\n')).toBe(false);
      expect(ok('^\\d+$', '١٢')).toBe(false);
    },
  );

  it(
    'patterns only a backtracking engine runs are refused with a reason: look-behind, negative look-ahead, ' +
      'repeat counts over 1000',
    () => {
      expect(checkJsonSchema({ type: 'string', pattern: '(?<!x)a' })).toMatch(/not a valid JSON Schema/);
      expect(checkJsonSchema({ type: 'string', pattern: '^(?!admin)' })).toMatch(/not a valid JSON Schema/);
      expect(checkJsonSchema({ type: 'string', pattern: '((a{100}){100}){100}' })).toMatch(/not a valid JSON Schema/);
    },
  );
});
