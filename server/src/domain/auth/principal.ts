import crypto from 'node:crypto';
import { DomainError } from '../errors';

/** Who is calling. A seller key is bound to one seller; the operator key comes from configuration. */
export type Principal = { role: 'public' } | { role: 'operator' } | { role: 'seller'; sellerId: string; keyId: string };

export const PUBLIC: Principal = { role: 'public' };

export function newApiKey(): { key: string; hash: Buffer } {
  const key = `mk_${crypto.randomBytes(32).toString('base64url')}`;
  return { key, hash: hashApiKey(key) };
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

export function isOperatorOrSeller(principal: Principal, sellerId: string | null): boolean {
  return principal.role === 'operator' || (principal.role === 'seller' && principal.sellerId === sellerId);
}
