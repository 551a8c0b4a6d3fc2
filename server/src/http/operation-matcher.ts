/**
 * The one request → operation matcher (issue #34 "one of each"): a request's method and raw path resolve to the
 * spec's path template and, when the method exists there, its operation. Metric and log labels (route-label.ts),
 * the access policy (access-policy.ts) and the rate limiter read it; Express still routes to the handler
 * (mount-operations.ts) and express-openapi-validator still finds its own route for validation (library behaviour).
 */
export interface SpecOperation {
  operationId: string;
  security?: Array<Record<string, unknown>>;
}
export type SpecPaths = Record<string, Record<string, SpecOperation | unknown>>;

export interface MatchedOperation {
  operationId: string;
  /** The operation's security has no anonymous alternative: a key is required. */
  keyRequired: boolean;
}
export interface RouteMatch {
  template: string;
  /** null when the path exists but not with this method. */
  operation: MatchedOperation | null;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

/** Whether an operation's `security` leaves no anonymous alternative (an empty requirement object). */
export function requiresKey(op: SpecOperation): boolean {
  return Array.isArray(op.security) && op.security.length > 0 && !op.security.some((s) => Object.keys(s).length === 0);
}

/** A path template's anchored regex: a parameter is one or more characters other than `/`, a trailing slash allowed. */
export function templateRegex(template: string): RegExp {
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(
    `^${template
      .split(/\{[^}]+\}/)
      .map(literal)
      .join('[^/]+')}/?$`,
  );
}

/** Templates are fixed at start; each is one anchored regex; literal segments first (`/v1/sellers/challenges`). */
export function createOperationMatcher(paths: SpecPaths): (method: string, path: string) => RouteMatch | null {
  const compiled = Object.entries(paths)
    .map(([template, item]) => {
      const operations: Record<string, MatchedOperation> = {};
      for (const m of METHODS) {
        const op = (item as Record<string, SpecOperation | undefined>)[m];
        if (op?.operationId) operations[m] = { operationId: op.operationId, keyRequired: requiresKey(op) };
      }
      return {
        template,
        operations,
        params: (template.match(/\{[^}]+\}/g) ?? []).length,
        re: templateRegex(template),
      };
    })
    .sort((a, b) => a.params - b.params);
  return (method, path) => {
    const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    for (const c of compiled) if (c.re.test(path)) return { template: c.template, operation: c.operations[m] ?? null };
    return null;
  };
}
