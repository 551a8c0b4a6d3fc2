import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import { presentSettle, presentVerify } from '../presenters-payments';
import { v1Payload, v1Requirements } from '../v1-payment-terms';

type FacilitatorHandlers = Pick<Handlers, 'getSupported' | 'verifyPayment' | 'settlePayment'>;
type SupportedBody = Extract<Awaited<ReturnType<Handlers['getSupported']>>, { status: 200 }>['body'];

/** The Facilitator tag (/v1): supported kinds, verify and settle; typed request -> one use case -> status + body. */
export function facilitatorHandlers({ facilitator, receipts, networks }: HandlerServices): FacilitatorHandlers {
  return {
    async getSupported() {
      return { status: 200, body: facilitator.supported() as SupportedBody };
    },
    async verifyPayment({ body, principal }) {
      const { paymentPayload, paymentRequirements } = body;
      const terms = {
        paymentPayload: v1Payload(networks, paymentPayload),
        paymentRequirements: v1Requirements(networks, paymentRequirements),
      };
      return { status: 200, body: presentVerify(await facilitator.verify({ ...body, ...terms, principal })) };
    },
    /**
     * A confirmed settlement answers the receipt's seller (the paywall calls with the seller's key) and the operator
     * with the attestation, which the paywall passes on to the payer; an anonymous caller gets none.
     */
    async settlePayment({ body, principal, clientAddress }) {
      const paymentPayload = v1Payload(networks, body.paymentPayload);
      const outcome = await facilitator.settle({ ...body, paymentPayload, principal, clientAddress });
      if (outcome.status !== 'settled') return { status: 202, body: presentSettle(outcome) };
      const attestation = await receipts.forReader(principal, outcome.receipt);
      return { status: 200, body: { ...presentSettle(outcome), ...(attestation ? { attestation } : {}) } };
    },
  };
}
