/**
 * The 30-line x402 MCP payment wrapper (issue 32): a stock MCP `Client` connected to the marketplace's remote
 * `/mcp` pays `call_paid_resource` with the agent's OWN wallet. First call: the answer is `isError` with the seller's
 * PaymentRequired (x402Version, accepts). The wrapper signs the terms the catalog lists for the resource (never
 * the live 402's, so a seller asking more or another recipient is refused by its facilitator), at most `maxAmount`,
 * and calls again with the payment in `params._meta["x402/payment"]`; the answer carries the seller's result and
 * `_meta["x402/payment-response"]` (the settlement). The buyer SDK's `payAndCallTool` does the same with a budget
 * (per call and total, counted until settled or proven unusable); this file shows the protocol without one.
 * `test/e2e/agent-route.test.ts` runs it against `LOCAL_DEV_DOMAINS=true npm start` (local simulation).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { toStroops, type createBuyerClient } from '@paid-api-marketplace/sdk-buyer';

type Wallet = Pick<ReturnType<typeof createBuyerClient>, 'resources' | 'signPayment'>;
type CallArgs = { resourceId: string } & Record<string, unknown>;

export async function callPaidResource(
  mcp: Client,
  wallet: Wallet,
  args: CallArgs,
  maxAmount: string,
): Promise<CallToolResult> {
  const call = (meta?: Record<string, unknown>) =>
    mcp.callTool({
      name: 'call_paid_resource',
      arguments: args,
      ...(meta ? { _meta: meta } : {}),
    }) as Promise<CallToolResult>;
  const first = await call();
  const asked = first.structuredContent as { x402Version?: unknown; accepts?: unknown } | undefined;
  // free, or not a payment request
  if (!first.isError || typeof asked?.x402Version !== 'number' || !Array.isArray(asked.accepts)) return first;
  const { paymentRequirements: terms } = await wallet.resources.get(args.resourceId); // what inspect_resource shows
  if (toStroops(terms.amount) > toStroops(maxAmount))
    throw new Error(`${args.resourceId} costs ${terms.amount}, more than ${maxAmount}: not signed`);
  const payment = await wallet.signPayment(terms); // an exact Stellar authorization, signed by your wallet only
  return call({ 'x402/payment': payment });
}
