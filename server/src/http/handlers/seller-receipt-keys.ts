import type { Handlers } from '../operation-types';
import type { HandlerDeps } from './deps';
import type { SellerReceiptKeysView } from '../../domain/sellers/seller-receipt-keys';

type SellerReceiptKeyHandlers = Pick<Handlers, 'getSellerReceiptKeys' | 'updateSellerReceiptKeys'>;

const present = (v: SellerReceiptKeysView) => ({ sellerId: v.sellerId, keys: v.keys, updatedAt: v.updatedAt ? v.updatedAt.toISOString() : null });

export function sellerReceiptKeyHandlers({ sellerReceiptKeys }: HandlerDeps): SellerReceiptKeyHandlers {
  return {
    async getSellerReceiptKeys({ params }) {
      return { status: 200, body: present(await sellerReceiptKeys.get(params.sellerId)) };
    },
    async updateSellerReceiptKeys({ principal, params, body }) {
      return { status: 200, body: present(await sellerReceiptKeys.put(principal, params.sellerId, body.keys)) };
    },
  };
}
