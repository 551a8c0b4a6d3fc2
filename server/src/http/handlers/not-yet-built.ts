import type { Handlers } from '../operation-types';
import { DomainError } from '../../domain/errors';

/**
 * Operations that are in the contract but not built yet (discovery; facilitator and payment reads). They answer
 * 503 SERVICE_UNAVAILABLE in the one envelope, never a fake success. Each moves to its own handler file when built.
 */
type Pending = Pick<
  Handlers,
  'listDiscoveryResources' | 'searchResources' | 'validateResource' | 'catalogResource' | 'getPayment' | 'getSettlement' | 'getReceipt' | 'getSupported' | 'verifyPayment' | 'settlePayment'
>;

const notBuilt = async (): Promise<never> => {
  throw new DomainError('SERVICE_UNAVAILABLE', 'This operation is not available in this version of the service yet');
};

export function notYetBuiltHandlers(): Pending {
  return {
    listDiscoveryResources: notBuilt,
    searchResources: notBuilt,
    validateResource: notBuilt,
    catalogResource: notBuilt,
    getPayment: notBuilt,
    getSettlement: notBuilt,
    getReceipt: notBuilt,
    getSupported: notBuilt,
    verifyPayment: notBuilt,
    settlePayment: notBuilt,
  };
}
