import type { Handlers } from '../operation-types';
import type { KeyService } from '../../domain/sellers/key-service';
import type { ApiKeyInfo } from '../../domain/sellers/types';
import type { components } from '../../generated/openapi';

type KeyHandlers = Pick<Handlers, 'createSellerKey' | 'listSellerKeys' | 'deleteSellerKey'>;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function presentApiKey(k: ApiKeyInfo): components['schemas']['ApiKey'] {
  return {
    id: k.id,
    name: k.name,
    scope: k.scope,
    prefix: k.prefix,
    createdAt: k.createdAt.toISOString(),
    expiresAt: iso(k.expiresAt),
    lastUsedAt: iso(k.lastUsedAt),
    revokedAt: iso(k.revokedAt),
  };
}

export function keyHandlers(keys: KeyService): KeyHandlers {
  return {
    async createSellerKey({ principal, params, body }) {
      const created = await keys.create(principal, params.sellerId, body);
      return { status: 201, body: { ...presentApiKey(created), secret: created.secret } };
    },
    async listSellerKeys({ principal, params }) {
      return { status: 200, body: { keys: (await keys.list(principal, params.sellerId)).map(presentApiKey) } };
    },
    async deleteSellerKey({ principal, params }) {
      return { status: 200, body: presentApiKey(await keys.revoke(principal, params.sellerId, params.keyId)) };
    },
  };
}
