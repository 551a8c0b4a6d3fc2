/**
 * express-openapi-validator takes the first route of its map that matches a request; the service moves the literal
 * routes that nothing before them matches to the front of that map (src/http/openapi-route-cache.ts), so the
 * verify and settle routes are tried first instead of 35th and 41st. Which route every request resolves to must not
 * change: checked over every path of the bundled contract, with parameters filled in, a trailing slash and another
 * case, and over templates that shadow a literal route.
 */
import fs from 'node:fs';
import path from 'node:path';
import { reorderRouteMap, memoizeValidatorRouteCompilation } from '../../src/http/openapi-route-cache';

type PathToRegexp = (route: string, options?: object) => { regexp: RegExp };
const validatorDir = path.dirname(require.resolve('express-openapi-validator/package.json'));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { pathToRegexp } = require(require.resolve('path-to-regexp', { paths: [validatorDir] })) as {
  pathToRegexp: PathToRegexp;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { sortRoutes } = require('express-openapi-validator/dist/framework/openapi.spec.loader') as {
  sortRoutes: (a: { expressRoute: string }, b: { expressRoute: string }) => number;
};

const OPTS = { sensitive: false, strict: false };
const firstMatch = (routes: string[], p: string) => routes.find((r) => pathToRegexp(r, OPTS).regexp.test(p));

/** The validator's route order for a list of OpenAPI paths: its own sort, as its spec loader does. */
function validatorOrder(openApiPaths: string[]): string[] {
  return openApiPaths
    .map((p) => ({ expressRoute: p.replace(/\{([^}]+)\}/g, ':$1') }))
    .sort(sortRoutes)
    .map((r) => r.expressRoute);
}

function samplesOf(route: string): string[] {
  const filled = route.replace(/:[^/]+/g, 'x_1');
  return [filled, `${filled}/`, filled.toUpperCase(), route.replace(/:[^/]+/g, 'verify')];
}

function expectSameResolution(routes: string[]) {
  const reordered = Object.keys(reorderRouteMap(Object.fromEntries(routes.map((r) => [r, {}])), pathToRegexp as never));
  expect([...reordered].sort()).toEqual([...routes].sort());
  for (const route of routes)
    for (const p of samplesOf(route)) expect([p, firstMatch(reordered, p)]).toEqual([p, firstMatch(routes, p)]);
  return reordered;
}

describe("the validator's route order", () => {
  it('resolves every path of the contract to the same route, with the payment routes tried first', () => {
    const spec = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../openapi/dist/openapi.json'), 'utf8')) as {
      paths: Record<string, unknown>;
    };
    const original = validatorOrder(Object.keys(spec.paths));
    expect(original.indexOf('/v1/verify')).toBeGreaterThan(20);
    const reordered = expectSameResolution(original);
    for (const hot of ['/v1/verify', '/v1/settle', '/x402/verify', '/x402/settle'])
      expect(reordered.indexOf(hot)).toBeLessThan(reordered.length - original.filter((r) => r.includes(':')).length);
  });

  it('keeps a literal route behind a template that takes its path first', () => {
    const routes = ['/a/:id', '/a/b', '/c', '/a/:id/d', '/a/b/d'];
    const reordered = expectSameResolution(routes);
    expect(reordered).toEqual(['/c', '/a/:id', '/a/b', '/a/:id/d', '/a/b/d']);
  });

  it('is applied to the validator the app builds', () => {
    memoizeValidatorRouteCompilation();
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { OpenApiContext } = require('express-openapi-validator/dist/framework/openapi.context');
    const routes = ['/a/:id', '/a/b', '/z'].map((expressRoute) => ({
      basePath: '',
      expressRoute,
      openApiRoute: expressRoute.replace(/:([^/]+)/g, '{$1}'),
      method: 'GET',
    }));
    const apiDoc = { paths: Object.fromEntries(routes.map((r) => [r.openApiRoute, { get: {} }])) };
    const context = new OpenApiContext({ apiDoc, basePaths: [''], routes, serial: 0 });
    expect(Object.keys(context.expressRouteMap)).toEqual(['/z', '/a/:id', '/a/b']);
  });
});
