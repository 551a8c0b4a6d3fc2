import crypto from 'node:crypto';
import { DomainError } from '../errors';
import type { ApiKeyScope } from '../sellers/types';

/** Who is calling. A seller key is bound to one seller and has a scope; the operator key comes from configuration. */
export type Principal =
  { role: 'public' } | { role: 'operator' } | { role: 'seller'; sellerId: string; keyId: string; scope: ApiKeyScope };

export const PUBLIC: Principal = { role: 'public' };

/** Characters of a key shown as its `prefix` (`mk_` and 8 random characters: safe to show, enough to recognise). */
export const API_KEY_PREFIX_LENGTH = 11;

export function newApiKey(): { key: string; hash: Buffer; prefix: string } {
  const key = `mk_${crypto.randomBytes(32).toString('base64url')}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, API_KEY_PREFIX_LENGTH) };
}

/** Keys are stored as SHA-256 digests: they are 256-bit random, so a slow hash adds nothing. */
export function hashApiKey(key: string): Buffer {
  return crypto.createHash('sha256').update(key, 'utf8').digest();
}

export function sameSecret(a: string, b: string): boolean {
  return crypto.timingSafeEqual(hashApiKey(a), hashApiKey(b));
}

/** The seller may act on data of `sellerId` (the operator may act on anything). */
export function assertActsFor(principal: Principal, sellerId: string): void {
  if (principal.role === 'operator') return;
  if (principal.role === 'seller' && principal.sellerId === sellerId) return;
  if (principal.role === 'public') throw new DomainError('UNAUTHORIZED', 'An API key is required');
  throw new DomainError('FORBIDDEN', 'This API key may not act for that seller');
}

/** The seller itself with an admin key, or the operator (key management). */
export function assertAdminFor(principal: Principal, sellerId: string): void {
  assertActsFor(principal, sellerId);
  if (principal.role === 'seller' && principal.scope !== 'admin')
    throw new DomainError('FORBIDDEN', 'Managing API keys needs an admin key of this seller');
}

export function isOperatorOrSeller(principal: Principal, sellerId: string | null): boolean {
  return principal.role === 'operator' || (principal.role === 'seller' && principal.sellerId === sellerId);
}
