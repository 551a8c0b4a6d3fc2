import type { Handlers } from '../operation-types';
import type { HandlerServices } from './deps';
import { resourceHandlers } from './resources';
import { sellerHandlers } from './sellers';
import { discoveryHandlers } from './discovery';
import { paymentHandlers } from './payments';
import { facilitatorHandlers } from './facilitator';
import { operationHandlers } from './operations';
import { mcpHandlers } from './mcp';
import { x402Handlers } from './x402';

export type { HandlerServices } from './deps';

/** Every operation of the contract, by operationId, one file per OpenAPI tag. A missing one is a compile error. */
export function createHandlers(services: HandlerServices): Handlers {
  return {
    ...resourceHandlers(services),
    ...sellerHandlers(services),
    ...discoveryHandlers(services),
    ...paymentHandlers(services),
    ...facilitatorHandlers(services),
    ...operationHandlers(services),
    ...mcpHandlers(),
    ...x402Handlers(services),
  };
}
