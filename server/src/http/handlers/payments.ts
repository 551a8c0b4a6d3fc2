import type { Handlers } from '../operation-types';
import type { HandlerDeps } from './deps';
import { presentPage, presentPayment } from '../presenters';
import { presentPaymentDetail, presentReceipt, presentSettle, presentSettlement, presentVerify } from '../presenters-payments';
import type { FacilitatorService } from '../../domain/facilitator/facilitator-service';

type PaymentHandlers = Pick<Handlers, 'listPayments'>;

export function paymentHandlers({ payments }: HandlerDeps): PaymentHandlers {
  return {
    async listPayments({ principal, query }) {
      const { cursor, limit, ...filters } = query;
      return { status: 200, body: presentPage(await payments.list(principal, filters, { cursor, limit }), presentPayment) };
    },
  };
}

export type FacilitatorHandlers = Pick<Handlers, 'getSupported' | 'verifyPayment' | 'settlePayment' | 'getPayment' | 'getSettlement' | 'getReceipt' | 'listSellerFees'>;

/** The facilitator's operations (built by the facilitator area): typed request -> one domain call -> status + body. */
export function facilitatorHandlers(svc: FacilitatorService): FacilitatorHandlers {
  return {
    async getSupported() {
      return { status: 200, body: svc.supported() as FacilitatorBody<'getSupported'> };
    },
    async verifyPayment({ body }) {
      return { status: 200, body: presentVerify(await svc.verify(body)) };
    },
    async settlePayment({ body, principal }) {
      const outcome = await svc.settle({ ...body, principal });
      return { status: outcome.status === 'settled' ? 200 : 202, body: presentSettle(outcome) };
    },
    async getPayment({ principal, params }) {
      const { attempt, settlement, receipt } = await svc.payment(principal, params.paymentId);
      return { status: 200, body: presentPaymentDetail(attempt, settlement, receipt) };
    },
    async getSettlement({ params }) {
      return { status: 200, body: presentSettlement(await svc.settlement(params.transactionHash)) };
    },
    async listSellerFees({ principal, query }) {
      const report = await svc.sellerFees(principal, query.day);
      return { status: 200, body: { ...report, items: report.items.map((i) => ({ ...i, network: i.network as 'stellar:testnet' | 'stellar:pubnet' })) } };
    },
    async getReceipt({ params }) {
      return { status: 200, body: presentReceipt(await svc.receipt(params.receiptId)) };
    },
  };
}

type FacilitatorBody<K extends keyof FacilitatorHandlers> = Extract<Awaited<ReturnType<FacilitatorHandlers[K]>>, { status: 200 }>['body'];
