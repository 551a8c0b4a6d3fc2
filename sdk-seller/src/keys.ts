import type { Client } from 'openapi-fetch';
import type { components, paths } from './generated/openapi.js';

type Schemas = components['schemas'];

/**
 * A seller's API keys (`/v1/sellers/{sellerId}/keys`; an admin key of that seller, or the operator key). Several
 * keys per seller, each with a name, a scope (`admin`: everything; `payments`: verify, settle and reading its own
 * payments, settlements and receipts, e.g. for a paywall) and an optional expiry. Rotation is create-then-revoke.
 * `create` answers the secret exactly once; a retry with the same Idempotency-Key does not replay it
 * (409 IDEMPOTENCY_CONFLICT naming the key). A revoked key answers 401 in every server process within a second.
 */
export function sellerKeys(
  raw: Client<paths>,
  idem: (o?: { idempotencyKey?: string }) => Record<string, string> | undefined,
) {
  return {
    create: async (
      sellerId: string,
      input: Schemas['ApiKeyInput'],
      o?: { idempotencyKey?: string },
    ): Promise<Schemas['ApiKeyCreated']> =>
      (await raw.POST('/v1/sellers/{sellerId}/keys', { params: { path: { sellerId } }, body: input, headers: idem(o) }))
        .data as Schemas['ApiKeyCreated'],
    list: async (sellerId: string): Promise<Schemas['ApiKey'][]> =>
      ((await raw.GET('/v1/sellers/{sellerId}/keys', { params: { path: { sellerId } } })).data as Schemas['ApiKeyList'])
        .keys,
    revoke: async (sellerId: string, keyId: string): Promise<Schemas['ApiKey']> =>
      (await raw.DELETE('/v1/sellers/{sellerId}/keys/{keyId}', { params: { path: { sellerId, keyId } } }))
        .data as Schemas['ApiKey'],
  };
}
