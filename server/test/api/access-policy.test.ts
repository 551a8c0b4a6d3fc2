import { loadBundledSpec } from '../../src/compose';
import { OPERATOR_ONLY_OPERATIONS, PAYMENTS_SCOPE_OPERATIONS, authorize } from '../../src/http/access-policy';
import { createOperationMatcher, type SpecPaths } from '../../src/http/operation-matcher';
import { createRouteLabeler } from '../../src/http/route-label';
import type { Principal } from '../../src/domain/auth/principal';

/** The one access policy and the one operation matcher, without a server: a request in, a decision out. */
describe('access policy and operation matcher', () => {
  const spec = loadBundledSpec() as { paths: SpecPaths };
  const match = createOperationMatcher(spec.paths);
  const operationIds = new Set(
    Object.values(spec.paths).flatMap((item) =>
      Object.values(item as Record<string, { operationId?: string }>).flatMap((op) =>
        op?.operationId ? [op.operationId] : [],
      ),
    ),
  );
  const payments: Principal = { role: 'seller', sellerId: 'sel_1', keyId: 'key_1', scope: 'payments' };
  const admin: Principal = { role: 'seller', sellerId: 'sel_1', keyId: 'key_2', scope: 'admin' };
  const refusal = (principal: Principal, method: string, path: string) => {
    const op = match(method, path)?.operation;
    if (!op) throw new Error(`no operation for ${method} ${path}`);
    try {
      authorize(principal, op);
      return 'allowed';
    } catch (err) {
      return (err as { code: string }).code;
    }
  };

  it('every operation the policy names exists in the contract, so a renamed operation cannot fall out of it', () => {
    for (const id of [...PAYMENTS_SCOPE_OPERATIONS, ...OPERATOR_ONLY_OPERATIONS]) expect(operationIds).toContain(id);
  });

  it(
    'a literal segment wins over a parameter, HEAD is GET, and an ' + 'unknown method on a known path has no operation',
    () => {
      expect(match('POST', '/v1/sellers/challenges')?.operation?.operationId).toBe('createSellerChallenge');
      expect(match('GET', '/v1/sellers/sel_123')?.operation?.operationId).toBe('getSeller');
      expect(match('HEAD', '/v1/resources/res_1')?.operation?.operationId).toBe('getResource');
      expect(match('PUT', '/v1/stats')).toEqual({ template: '/v1/stats', operation: null });
      expect(match('GET', '/v1/nothing-here')).toBeNull();
    },
  );

  it('route labels come from the same matcher: templates, mount prefixes, and unmatched for anything else', () => {
    const label = createRouteLabeler(match);
    expect(label('/v1/resources/res_42')).toBe('/v1/resources/{id}');
    expect(label('/x402/verify')).toBe('/x402');
    expect(label('/random/path/123')).toBe('unmatched');
  });

  it('operator-only operations: anonymous 401, any seller key 403, the operator allowed', () => {
    expect(refusal({ role: 'public' }, 'GET', '/v1/operations/dashboard')).toBe('UNAUTHORIZED');
    expect(refusal(admin, 'GET', '/v1/operations/dashboard')).toBe('FORBIDDEN');
    expect(refusal({ role: 'operator' }, 'GET', '/v1/operations/dashboard')).toBe('allowed');
  });

  it('a payments key may verify and settle but not create a resource; an admin key may', () => {
    expect(refusal(payments, 'POST', '/v1/settle')).toBe('allowed');
    expect(refusal(payments, 'POST', '/v1/resources')).toBe('FORBIDDEN');
    expect(refusal(admin, 'POST', '/v1/resources')).toBe('allowed');
    expect(refusal({ role: 'public' }, 'POST', '/v1/resources')).toBe('UNAUTHORIZED');
  });
});
