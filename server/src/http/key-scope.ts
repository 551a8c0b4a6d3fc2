import type { RequestHandler } from 'express';
import { assertScopeAllows, type Principal } from '../domain/auth/principal';

type SpecPaths = Record<string, Record<string, { operationId?: string } | unknown>>;
const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

/** A matcher from (method, raw path) to the spec's operationId, or null for a path or method the spec does not have. */
export function createOperationMatcher(paths: SpecPaths): (method: string, path: string) => string | null {
  const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const compiled = Object.entries(paths)
    .map(([template, item]) => ({
      params: (template.match(/\{[^}]+\}/g) ?? []).length,
      re: new RegExp(`^${template.split(/\{[^}]+\}/).map(literal).join('[^/]+')}/?$`),
      ops: Object.fromEntries(METHODS.filter((m) => (item as Record<string, { operationId?: string }>)[m]?.operationId).map((m) => [m, (item as Record<string, { operationId: string }>)[m].operationId])),
    }))
    .sort((a, b) => a.params - b.params); // literal segments first: /v1/sellers/challenges before /v1/sellers/{sellerId}
  return (method, path) => {
    const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    for (const c of compiled) if (c.re.test(path)) return c.ops[m] ?? null;
    return null;
  };
}

/**
 * A seller key's scope is enforced before the body is parsed or validated: a `payments` key calling an operation
 * outside its scope answers 403 FORBIDDEN (domain/auth/principal.ts PAYMENTS_SCOPE_OPERATIONS). Paths the spec does
 * not know are left to the 404 handler. mount-operations.ts checks the same rule again by operationId.
 */
export function enforceKeyScope(paths: SpecPaths): RequestHandler {
  const operationOf = createOperationMatcher(paths);
  return (req, res, next) => {
    const principal = res.locals.principal as Principal;
    if (principal.role !== 'seller' || principal.scope === 'admin') return next();
    const operationId = operationOf(req.method, req.path);
    if (operationId === null) return next();
    try {
      assertScopeAllows(principal, operationId);
      next();
    } catch (err) {
      next(err);
    }
  };
}
