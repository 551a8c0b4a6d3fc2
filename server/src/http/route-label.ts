import type { RouteMatch } from './operation-matcher';

/**
 * Bounded metric labels for HTTP requests. A label value is one of the spec's path templates
 * (`/v1/resources/{id}`), `/docs`, or the fixed `unmatched`: never a raw path, so anonymous callers cannot grow
 * the number of series by requesting random URLs. The method label is one of the HTTP methods the API knows, or
 * `OTHER`.
 */
export const UNMATCHED_ROUTE = 'unmatched';
/** Mounts outside the spec's paths (docs, dashboard, MCP, x402 face, well-known files): one label per prefix. */
const MOUNT_PREFIXES = ['/docs', '/dashboard', '/mcp', '/x402', '/.well-known'];
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'OTHER';
}

/** The route label of a raw path, from the one operation matcher (operation-matcher.ts). */
export function createRouteLabeler(
  match: (method: string, path: string) => RouteMatch | null,
): (path: string) => string {
  return (path) => {
    for (const prefix of MOUNT_PREFIXES) if (path === prefix || path.startsWith(`${prefix}/`)) return prefix;
    return match('GET', path)?.template ?? UNMATCHED_ROUTE;
  };
}
