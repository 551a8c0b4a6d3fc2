import type { Handlers } from '../operation-types';
import { DomainError } from '../../domain/errors';

/**
 * The MCP tag. `POST /mcp` (sendMcpMessage) is served by the MCP transport (../mcp/mount.ts: the marketplace MCP
 * server over Streamable HTTP, mounted before the operation routes); this handler completes the typed handler
 * object and answers only if the router were ever bypassed.
 */
export function mcpHandlers(): Pick<Handlers, 'sendMcpMessage'> {
  return {
    async sendMcpMessage() {
      throw new DomainError('INTERNAL_ERROR', 'POST /mcp is served by the MCP transport');
    },
  };
}
