import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import { presentPage, presentPayment } from '../presenters';
import { presentPaymentDetail, presentReceipt, presentSettlement } from '../presenters-payments';

type PaymentHandlers = Pick<
  Handlers,
  'listPayments' | 'getPayment' | 'getSettlement' | 'getReceipt' | 'getReceiptKeys'
>;

/** The Payments tag: payment attempts, settlements, receipts (with their attestation for those it may show) and the
 * receipt keys. */
export function paymentHandlers({ payments, facilitator, receipts }: HandlerServices): PaymentHandlers {
  return {
    async listPayments({ principal, query }) {
      const { cursor, limit, ...filters } = query;
      return {
        status: 200,
        body: presentPage(await payments.list(principal, filters, { cursor, limit }), presentPayment),
      };
    },
    async getPayment({ principal, params }) {
      const { attempt, settlement, receipt } = await facilitator.payment(principal, params.paymentId);
      return { status: 200, body: presentPaymentDetail(attempt, settlement, receipt) };
    },
    async getSettlement({ params }) {
      return { status: 200, body: presentSettlement(await facilitator.settlement(params.transactionHash)) };
    },
    /** The receipt's seller and the operator also get the attestation; an anonymous read never does (it names the
     * payer). */
    async getReceipt({ principal, params }) {
      const receipt = await facilitator.receipt(params.receiptId);
      const attestation = await receipts.forReader(principal, receipt);
      return { status: 200, body: { ...presentReceipt(receipt), ...(attestation ? { attestation } : {}) } };
    },
    async getReceiptKeys() {
      return { status: 200, body: await receipts.jwks() };
    },
  };
}
