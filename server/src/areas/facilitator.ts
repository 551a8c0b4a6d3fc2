import type { Area, AreaContext } from './area';
import { DomainError } from '../domain/errors';

export type FacilitatorOperation = 'getSupported' | 'verifyPayment' | 'settlePayment' | 'getPayment' | 'getSettlement' | 'getReceipt';

const notBuilt = async (): Promise<never> => {
  throw new DomainError('SERVICE_UNAVAILABLE', 'The facilitator is not available in this version of the service yet');
};

/** The facilitator and payments area: supported, verify, settle, payment reads and the settlement workers. */
export function createFacilitatorArea(_ctx: AreaContext): Area<FacilitatorOperation> {
  return {
    handlers: { getSupported: notBuilt, verifyPayment: notBuilt, settlePayment: notBuilt, getPayment: notBuilt, getSettlement: notBuilt, getReceipt: notBuilt },
    workers: [],
  };
}
