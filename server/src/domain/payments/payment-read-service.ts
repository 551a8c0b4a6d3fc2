import { DomainError } from '../errors';
import { assertActsFor, type Principal } from '../auth/principal';
import { decodeCursor, pageLimit, type Page, type PageRequest } from '../pagination';
import type { PaymentAttempt, PaymentFilters, PaymentReadRepository } from './types';

/** Reads of payment attempts. Sellers see only their own; the payer address is shown only to them and the operator. */
export function createPaymentReadService(deps: {
  payments: PaymentReadRepository;
  sellerExists(id: string): Promise<boolean>;
}) {
  return {
    async list(principal: Principal, filters: PaymentFilters, page: PageRequest): Promise<Page<PaymentAttempt>> {
      if (principal.role === 'public') throw new DomainError('UNAUTHORIZED', 'An API key is required');
      if (principal.role === 'seller') {
        if (filters.sellerId && filters.sellerId !== principal.sellerId)
          throw new DomainError('FORBIDDEN', 'This API key may read only its own payments');
        filters = { ...filters, sellerId: principal.sellerId };
      }
      return deps.payments.list(filters, decodeCursor(page.cursor), pageLimit(page.limit));
    },

    async listForSeller(principal: Principal, sellerId: string, page: PageRequest): Promise<Page<PaymentAttempt>> {
      if (!(await deps.sellerExists(sellerId))) throw new DomainError('NOT_FOUND', `No seller with id ${sellerId}`);
      assertActsFor(principal, sellerId);
      return deps.payments.list({ sellerId }, decodeCursor(page.cursor), pageLimit(page.limit));
    },
  };
}

export type PaymentReadService = ReturnType<typeof createPaymentReadService>;
