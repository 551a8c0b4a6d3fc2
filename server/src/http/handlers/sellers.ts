import type { Handlers } from '../operation-types';
import type { HandlerDeps } from './deps';
import { presentDomainVerification, presentPage, presentPayment, presentResource, presentSeller } from '../presenters';

type SellerHandlers = Pick<Handlers, 'createSellerChallenge' | 'createSeller' | 'getSeller' | 'verifySellerDomain' | 'listSellerResources' | 'listSellerPayments'>;

export function sellerHandlers({ sellers, resources, payments }: HandlerDeps): SellerHandlers {
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
      return { status: 200, body: presentDomainVerification(await sellers.verifyDomain(principal, params.sellerId, body?.method)) };
    },
    async listSellerResources({ principal, params, query }) {
      await sellers.get(params.sellerId);
      return { status: 200, body: presentPage(await resources.list(principal, { sellerId: params.sellerId }, query), presentResource) };
    },
    async listSellerPayments({ principal, params, query }) {
      return { status: 200, body: presentPage(await payments.listForSeller(principal, params.sellerId, query), presentPayment) };
    },
  };
}
