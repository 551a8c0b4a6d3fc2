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

/** A matcher from raw request path to spec template. Templates are fixed at start; each is one anchored regex. */
export function createRouteMatcher(specPaths: Iterable<string>): (path: string) => string {
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const compiled = [...specPaths].map((template) => ({
    template,
    // literal segments first, so /v1/sellers/challenges wins over /v1/sellers/{sellerId}
    params: (template.match(/\{[^}]+\}/g) ?? []).length,
    re: new RegExp(`^${template.split(/\{[^}]+\}/).map(literal).join('[^/]+')}/?$`),
  }));
  compiled.sort((a, b) => a.params - b.params);
  return (path) => {
    for (const prefix of MOUNT_PREFIXES) if (path === prefix || path.startsWith(`${prefix}/`)) return prefix;
    for (const c of compiled) if (c.re.test(path)) return c.template;
    return UNMATCHED_ROUTE;
  };
}
