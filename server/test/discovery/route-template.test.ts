import fc from 'fast-check';
import { pathMatchesTemplate } from '../../src/domain/catalog/route-template';

/** The previous implementation (one regular expression per call), kept as the reference the new one must agree with. */
function byRegex(path: string, template: string): boolean {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = template
    .split('/')
    .map((seg) =>
      /^\{([A-Za-z_][A-Za-z0-9_]{0,63})\}$/.test(seg) ? `(?:${esc(seg)}|[A-Za-z0-9._~%!$&'()*+,;=:@-]+)` : esc(seg),
    )
    .join('/');
  return new RegExp(`^${pattern}$`).test(path);
}

describe('a URL path fits a route template', () => {
  it('when literals are equal and each placeholder stands for one non-empty segment', () => {
    expect(pathMatchesTemplate('/v1/weather/paris', '/v1/weather/{city}')).toBe(true);
    expect(pathMatchesTemplate('/v1/weather/{city}', '/v1/weather/{city}')).toBe(true);
    expect(pathMatchesTemplate('/v1/weather/', '/v1/weather/{city}')).toBe(false);
    expect(pathMatchesTemplate('/v1/weather/a/b', '/v1/weather/{city}')).toBe(false);
    expect(pathMatchesTemplate('/v1/weathers/paris', '/v1/weather/{city}')).toBe(false);
    expect(pathMatchesTemplate('/v1/x', '/v1/x/')).toBe(false);
    expect(pathMatchesTemplate('/v1/a%2Fb', '/v1/{p}')).toBe(true);
    expect(pathMatchesTemplate('/v1/a b', '/v1/{p}')).toBe(false);
  });

  it('answers as the regular-expression matcher it replaces, for any path and template', () => {
    const seg = fc.oneof(
      fc.constantFrom(
        'v1',
        'weather',
        '{city}',
        '{q}',
        '',
        'a.b',
        '{',
        '}',
        '{x',
        'x}',
        '*',
        '(a)',
        'a+b',
        '%2F',
        'a b',
        '$',
        '^',
      ),
      fc.string({ maxLength: 6 }),
    );
    const pathOf = fc.array(seg, { maxLength: 5 }).map((s) => `/${s.join('/')}`);
    fc.assert(
      fc.property(pathOf, pathOf, (path, template) => pathMatchesTemplate(path, template) === byRegex(path, template)),
      { numRuns: 3000 },
    );
  });
});
