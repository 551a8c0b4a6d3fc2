import type { Handlers } from '../operation-types';
import type { HandlerDeps } from './deps';
import { resourceHandlers } from './resources';
import { sellerHandlers } from './sellers';
import { keyHandlers } from './keys';
import { paymentHandlers } from './payments';
import { operationHandlers } from './operations';
import { sellerReceiptKeyHandlers } from './seller-receipt-keys';
import type { DiscoveryOperation } from '../../areas/discovery';
import type { FacilitatorOperation } from '../../areas/facilitator';
import type { OperationsOperation } from '../../areas/operations';
import { mcpHandlers } from '../mcp/mount';
import type { X402Operation } from '../x402';

export type { HandlerDeps } from './deps';

/** Every operation of the contract, by operationId. A missing one is a compile error. */
export function createHandlers(deps: HandlerDeps, areas: Pick<Handlers, DiscoveryOperation | FacilitatorOperation | OperationsOperation | X402Operation>): Handlers {
  return {
    ...resourceHandlers(deps),
    ...sellerHandlers(deps),
    ...keyHandlers(deps.keys),
    ...paymentHandlers(deps),
    ...operationHandlers(deps),
    ...mcpHandlers,
    ...sellerReceiptKeyHandlers(deps),
    ...areas,
  };
}
