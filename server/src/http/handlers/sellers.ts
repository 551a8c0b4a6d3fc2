import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import type { ApiKeyInfo } from '../../domain/sellers/types';
import type { SellerReceiptKeysView } from '../../domain/sellers/seller-receipt-keys';
import type { components } from '../../generated/openapi';
import { presentDomainVerification, presentPage, presentPayment, presentResource, presentSeller } from '../presenters';

type SellerHandlers = Pick<
  Handlers,
  | 'createSellerChallenge'
  | 'createSeller'
  | 'getSeller'
  | 'verifySellerDomain'
  | 'listSellerResources'
  | 'listSellerPayments'
  | 'createSellerKey'
  | 'listSellerKeys'
  | 'deleteSellerKey'
  | 'getSellerReceiptKeys'
  | 'updateSellerReceiptKeys'
>;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function presentApiKey(k: ApiKeyInfo): components['schemas']['ApiKey'] {
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

const presentReceiptKeys = (v: SellerReceiptKeysView) => ({
  sellerId: v.sellerId,
  keys: v.keys,
  updatedAt: iso(v.updatedAt),
});

/** The Sellers tag: sign-up, domain verification, a seller's resources and payments, its API keys and receipt keys. */
export function sellerHandlers({
  sellers,
  resources,
  payments,
  keys,
  sellerReceiptKeys,
}: HandlerServices): SellerHandlers {
  return {
    async createSellerChallenge({ body }) {
      const c = await sellers.createWalletChallenge(body.walletAddress);
      return { status: 201, body: { ...c, expiresAt: c.expiresAt.toISOString() } };
    },
    async createSeller({ body }) {
      const created = await sellers.create(body);
      return { status: 201, body: { seller: presentSeller(created.seller), apiKey: created.apiKey } };
    },
    async getSeller({ params }) {
      return { status: 200, body: presentSeller(await sellers.get(params.sellerId)) };
    },
    async verifySellerDomain({ principal, params, body }) {
      return {
        status: 200,
        body: presentDomainVerification(await sellers.verifyDomain(principal, params.sellerId, body?.method)),
      };
    },
    async listSellerResources({ principal, params, query }) {
      await sellers.get(params.sellerId);
      return {
        status: 200,
        body: presentPage(await resources.list(principal, { sellerId: params.sellerId }, query), presentResource),
      };
    },
    async listSellerPayments({ principal, params, query }) {
      return {
        status: 200,
        body: presentPage(await payments.listForSeller(principal, params.sellerId, query), presentPayment),
      };
    },
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
    async getSellerReceiptKeys({ params }) {
      return { status: 200, body: presentReceiptKeys(await sellerReceiptKeys.get(params.sellerId)) };
    },
    async updateSellerReceiptKeys({ principal, params, body }) {
      return {
        status: 200,
        body: presentReceiptKeys(await sellerReceiptKeys.put(principal, params.sellerId, body.keys, body.proofs)),
      };
    },
  };
}
