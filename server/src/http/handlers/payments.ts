import type { Handlers } from '../operation-types';
import type { HandlerDeps } from './deps';
import { presentPage, presentPayment } from '../presenters';

type PaymentHandlers = Pick<Handlers, 'listPayments'>;

export function paymentHandlers({ payments }: HandlerDeps): PaymentHandlers {
  return {
    async listPayments({ principal, query }) {
      const { cursor, limit, ...filters } = query;
      return { status: 200, body: presentPage(await payments.list(principal, filters, { cursor, limit }), presentPayment) };
    },
  };
}
