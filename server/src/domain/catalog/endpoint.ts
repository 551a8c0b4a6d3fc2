import { DomainError } from '../errors';
import type { ResourceTerms } from './resource-rules';

/**
 * One seller, one active listing per endpoint (issue #22): an http resource is identified by its seller, method and
 * URL. The method is the Bazaar extension's `info.input.method` (GET when absent), upper-cased: the same expression
 * as the database's unique index `resources_active_endpoint_uq` (migration 0014), which is what guarantees it when
 * two writers race. MCP resources share a server URL between tools (their tool names are unique on their own).
 */
export const ENDPOINT_UNIQUE_INDEX = 'resources_active_endpoint_uq';

export function endpointMethod(terms: Pick<ResourceTerms, 'type' | 'extensions'>): string | null {
  if (terms.type !== 'http') return null;
  const bazaar = (terms.extensions as { bazaar?: { info?: { input?: { method?: unknown } } } } | undefined)?.bazaar;
  const method = bazaar?.info?.input?.method;
  return typeof method === 'string' ? method.toUpperCase() : 'GET';
}

/** True when a write was refused by the unique index on active endpoints. */
export function isDuplicateEndpoint(err: unknown): boolean {
  // pg's own error (raw statements) or Sequelize's wrapper of it (model writes): SQLSTATE 23505 on that index.
  const e = err as { code?: string; constraint?: string; parent?: { code?: string; constraint?: string } };
  const pg = e?.parent ?? e;
  return pg?.code === '23505' && pg.constraint === ENDPOINT_UNIQUE_INDEX;
}

/** The 409 that names the first listing, so the seller can update it instead. */
export function duplicateResource(existingId: string, method: string, url: string): DomainError {
  return new DomainError(
    'DUPLICATE_RESOURCE',
    `You already list ${method} ${url} as resource ${existingId}; update that resource (PATCH ` +
      `/v1/resources/${existingId}, or catalog with resourceId ${existingId}) instead of creating a second one`,
    [
      {
        field: 'url',
        message: `already listed by your active resource ${existingId} (${method} ${url})`,
        code: 'DUPLICATE_RESOURCE',
      },
    ],
  );
}

/** Runs a write; a refusal by the unique index becomes the 409 naming the resource that holds the endpoint. */
export async function guardDuplicateEndpoint<T>(
  terms: Pick<ResourceTerms, 'type' | 'extensions' | 'url'> & { sellerId: string },
  findActive: (sellerId: string, url: string, method: string) => Promise<string | null>,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const method = endpointMethod(terms);
    if (!method || !isDuplicateEndpoint(err)) throw err;
    const existing = await findActive(terms.sellerId, terms.url, method);
    throw duplicateResource(existing ?? 'unknown', method, terms.url);
  }
}
