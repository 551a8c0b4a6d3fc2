/**
 * paidTool(): a tool of your own MCP server (the official `@modelcontextprotocol/sdk` McpServer) that charges per
 * call through the marketplace's facilitator, on the wire as the x402 MCP transport defines it
 * (https://github.com/coinbase/x402, specs/transports-v2/mcp.md). The guarantees are paywall()'s, for MCP:
 *
 * 1. A call without `params._meta["x402/payment"]` answers a tool result with `isError: true` whose
 *    `structuredContent` is the x402 v2 PaymentRequired (requirements in `accepts`) and whose `content[0].text` is
 *    the same object as JSON. The handler does not run.
 * 2. A payment (ours, or the stock x402 `exact` Stellar payload) is verified through POST /v1/verify BEFORE the
 *    handler runs. A refusal answers the PaymentRequired with the facilitator's code in `error` (and `message`).
 * 3. The handler runs. A result with `isError`, a thrown error, or structured content that breaks the tool's
 *    output schema is returned unpaid: nothing is settled.
 * 4. Otherwise POST /v1/settle runs before the result leaves, and the result leaves only once the settlement is
 *    CONFIRMED on the ledger (paywall/settle-outcome.ts: a cut connection, "still in progress" or a pending answer
 *    make it ask the service for the payment's outcome, within a bounded wait). The result carries the settlement
 *    (transaction hash, receipt id, network, payer) in `_meta["x402/payment-response"]`. If settlement definitely
 *    fails the tool's answer is dropped and the caller gets `isError` with the PaymentRequired and
 *    `x402/payment-response: { success: false }`; if the outcome is still unknown when the wait ends, the answer is
 *    withheld and the caller gets `isError` with `SETTLEMENT_UNCONFIRMED` and the payment id (not a PaymentRequired:
 *    the payment may still settle).
 *
 * One signed payment buys one call: the facilitator refuses a payload it has seen (REPLAY_DETECTED).
 * The advertised outputSchema admits the PaymentRequired (admitPaymentRequired); PAID_TOOL_INSTRUCTIONS tells agents
 * how to pay (statelessMcpHandler gives it to servers without instructions of their own).
 * The requirements, the PaymentRequired and the facilitator calls are the paywall's own (src/paywall/paywall.ts).
 * `@modelcontextprotocol/sdk` is an optional peer of this package: this file imports only its types, so the SDK's
 * main entry loads without it.
 */
import type { McpServer, RegisteredTool, ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ZodRawShapeCompat } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { components } from '../generated/openapi.js';
import { ApiError } from '../core/errors.js';
import {
  facilitatorRequirements,
  paymentRequiredFor,
  requirementsSource,
  settlementResponse,
  type PaywallClient,
  type PaywallOptions,
  type PaywallPayment,
  type SellerRequirements,
} from '../paywall/paywall.js';
import { PayloadError, toFacilitatorPayload } from '../paywall/x402-translate.js';
import {
  FacilitatorTimeout,
  pendingMessage,
  settleOutcome,
  verifyWithFacilitator,
  type SettleWait,
} from '../paywall/settle-outcome.js';
import type { ReceiptSigner } from '../paywall/receipt-signer.js';

type Schemas = components['schemas'];

/** The `_meta` keys of the x402 MCP transport. */
export const X402_PAYMENT_META = 'x402/payment';
export const X402_PAYMENT_RESPONSE_META = 'x402/payment-response';

export interface PaidToolConfig<
  InputArgs extends ZodRawShapeCompat | undefined = undefined,
  OutputArgs extends ZodRawShapeCompat | undefined = undefined,
> {
  /** The seller client: its facilitator calls go to the marketplace it was created for. */
  client: PaywallClient;
  /** The cataloged `mcp` resource this tool is (settlement is recorded against it). */
  resourceId: string;
  title?: string;
  description?: string;
  /** zod raw shape of the arguments (validated by the MCP SDK before anything is paid). */
  inputSchema?: InputArgs;
  /** zod raw shape of `structuredContent`: an answer that breaks it is not settled. */
  outputSchema?: OutputArgs;
  annotations?: ToolAnnotations;
  /** Fixed terms instead of the resource's current ones (see PaywallOptions.requirements). */
  requirements?: PaywallOptions['requirements'];
  /** Default 60 s. */
  requirementsTtlMs?: number;
  /** How long to find out a settlement's outcome when the answer is not final (see paywall/settle-outcome.ts). */
  settle?: SettleWait;
  /** Signs the seller's own offer-and-receipt receipt for each confirmed sale (see createReceiptSigner). */
  receiptSigner?: ReceiptSigner;
}

type ToolArgs<InputArgs extends ZodRawShapeCompat | undefined> = InputArgs extends ZodRawShapeCompat
  ? Parameters<ToolCallback<InputArgs>>[0]
  : Record<string, never>;
type ToolExtra = Parameters<ToolCallback<undefined>>[0];

/** Your tool: runs only once the payment is verified; `payment` names the payer and the attempt. */
export type PaidToolHandler<InputArgs extends ZodRawShapeCompat | undefined> = (
  args: ToolArgs<InputArgs>,
  payment: PaywallPayment,
  extra: ToolExtra,
) => CallToolResult | Promise<CallToolResult>;

export function paidTool<
  InputArgs extends ZodRawShapeCompat | undefined = undefined,
  OutputArgs extends ZodRawShapeCompat | undefined = undefined,
>(
  server: McpServer,
  name: string,
  config: PaidToolConfig<InputArgs, OutputArgs>,
  handler: PaidToolHandler<InputArgs>,
): RegisteredTool {
  if (!config.resourceId)
    throw new TypeError('paidTool: resourceId is required (settlement is recorded against the cataloged resource)');
  const requirements = requirementsSource(config);
  const resource = { url: `mcp://tool/${name}`, description: config.description ?? '', mimeType: 'application/json' };
  const outputShape = config.outputSchema as
    Record<string, { safeParseAsync?: (v: unknown) => Promise<{ success: boolean }> }> | undefined;

  const paymentRequired = (
    terms: SellerRequirements,
    error: string,
    extra: Record<string, unknown> = {},
  ): CallToolResult => {
    const body = { ...paymentRequiredFor(terms, config.resourceId, resource, error), ...extra };
    return { isError: true, structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }] };
  };
  const refusal = (terms: SellerRequirements, err: unknown, extra: Record<string, unknown> = {}): CallToolResult => {
    const code = err instanceof ApiError ? err.code : err instanceof PayloadError ? err.code : 'SERVICE_UNAVAILABLE';
    const message =
      err instanceof ApiError || err instanceof PayloadError ? err.message : 'The facilitator could not be reached';
    return paymentRequired(terms, code, { message, ...extra });
  };

  const run = async (args: unknown, extra: ToolExtra): Promise<CallToolResult> => {
    let terms: SellerRequirements;
    try {
      terms = await requirements();
    } catch (err) {
      const code = err instanceof ApiError ? err.code : 'SERVICE_UNAVAILABLE';
      const text = JSON.stringify({ error: { code, message: 'Could not read the payment requirements' } });
      return { isError: true, content: [{ type: 'text', text }] };
    }
    const sent = extra._meta?.[X402_PAYMENT_META];
    if (!sent || typeof sent !== 'object' || Array.isArray(sent)) return paymentRequired(terms, 'PAYMENT_REQUIRED');

    let payload: Schemas['PaymentPayload'];
    try {
      payload = toFacilitatorPayload(sent as Record<string, unknown>, terms);
    } catch (err) {
      return refusal(terms, err);
    }
    let verified: Schemas['VerifyResponse'];
    try {
      verified = await verifyWithFacilitator(
        config.client,
        payload,
        facilitatorRequirements(terms),
        config.resourceId,
        config.settle,
      );
    } catch (err) {
      if (err instanceof FacilitatorTimeout) {
        // Indeterminate, not a refusal: no PaymentRequired (the caller must not pay again), the tool does not run.
        const body = { error: { code: 'SETTLEMENT_UNCONFIRMED', message: pendingMessage(err) } };
        return { isError: true, structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }] };
      }
      return refusal(terms, err);
    }
    const payment: PaywallPayment = {
      paymentAttemptId: verified.paymentAttemptId,
      payer: verified.payer,
      network: verified.network,
    };

    let result: CallToolResult;
    try {
      result = await handler(args as ToolArgs<InputArgs>, payment, extra);
    } catch (err) {
      // Unpaid: the MCP SDK would turn the throw into this same kind of result.
      return { isError: true, content: [{ type: 'text', text: err instanceof Error ? err.message : String(err) }] };
    }
    if (result.isError) return result;
    if (outputShape && !(await matchesShape(outputShape, result.structuredContent))) {
      return {
        isError: true,
        content: [
          { type: 'text', text: `Tool ${name} answered structured content that breaks its output schema: not charged` },
        ],
      };
    }

    const outcome = await settleOutcome(
      config.client,
      { paymentAttemptId: verified.paymentAttemptId, paymentPayload: payload, resourceId: config.resourceId },
      config.settle,
    );
    if (outcome.kind === 'failed') {
      const err = outcome.error ?? Object.assign(new Error(outcome.message), { code: outcome.code });
      return refusal(terms, outcome.error ?? err, {
        error: outcome.code,
        message: outcome.message,
        [X402_PAYMENT_RESPONSE_META]: {
          success: false,
          errorReason: outcome.code,
          transaction: '',
          network: terms.network,
        },
      });
    }
    if (outcome.kind === 'unknown') {
      // Not a request to pay again: the payment may still settle. The answer is withheld.
      const body = {
        error: { code: outcome.code, message: outcome.message, paymentAttemptId: outcome.paymentAttemptId },
      };
      return { isError: true, structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }] };
    }
    const response = await settlementResponse(outcome, verified.payer, { signer: config.receiptSigner, terms });
    return { ...result, _meta: { ...(result._meta ?? {}), [X402_PAYMENT_RESPONSE_META]: response } };
  };

  const toolConfig = {
    title: config.title,
    description: config.description,
    inputSchema: config.inputSchema,
    outputSchema: config.outputSchema,
    annotations: config.annotations,
  };
  const callback = config.inputSchema
    ? (args: unknown, extra: ToolExtra) => run(args, extra)
    : (extra: ToolExtra) => run({}, extra);
  const registered = (server.registerTool as (n: string, c: typeof toolConfig, cb: unknown) => RegisteredTool)(
    name,
    toolConfig,
    callback,
  );
  admitPaymentRequired(registered);
  return registered;
}

/**
 * The outputSchema the tool advertises admits the unpaid answer too. A stock MCP client (`Client.callTool`) checks
 * `structuredContent` against the advertised schema even on `isError`, so a strict schema would turn the
 * PaymentRequired of the first call into a client-side "does not match the tool's output schema" error and the
 * agent would never see what to pay. The advertised schema is the declared one with every field optional and extra
 * fields allowed (zod `.partial().passthrough()`, zod 3 and 4); the paid answer is still checked against the
 * declared shape, strictly, before anything is settled (matchesShape).
 */
function admitPaymentRequired(tool: RegisteredTool): void {
  const declared = tool.outputSchema as { partial?: () => { passthrough?: () => unknown } } | undefined;
  const admitting = declared?.partial?.()?.passthrough?.();
  if (admitting) tool.outputSchema = admitting as RegisteredTool['outputSchema'];
}

/**
 * What a paid MCP server tells agents at initialize (MCP `instructions`): the tools are paid per call with x402 and
 * how to pay. statelessMcpHandler() gives it to a server built without instructions of its own; a server with its own
 * can append it: `new McpServer(info, { instructions: `${mine}\n\n${PAID_TOOL_INSTRUCTIONS}` })`.
 */
export const PAID_TOOL_INSTRUCTIONS =
  'Paid tools of this server charge per call with x402 (scheme exact, on Stellar), by the x402 MCP transport (https://github.com/coinbase/x402, specs/transports-v2/mcp.md). ' +
  ('Call the tool: unpaid, the result is isError with the x402 PaymentRequired in structuredContent ' +
    '(x402Version; accepts: scheme, network, amount in atomic units, asset contract, payTo, maxTimeoutSeconds). ') +
  ("Sign one of accepts with your own wallet (an exact Stellar authorization entry; the buyer SDK's " +
    'payAndCallTool does it within a budget) and call the same tool again with the same arguments and the ' +
    'payment payload in params._meta["x402/payment"]. ') +
  ('The payment is verified before the tool runs and settled only when the tool succeeds; the result then ' +
    'carries the settlement (transaction, receipt id) in _meta["x402/payment-response"]. A refused payment ' +
    'answers the PaymentRequired again with the reason in `error`. One payment buys one call.');

/** Structured content against a zod raw shape (zod 3 or 4 classic schemas: each has safeParseAsync). */
async function matchesShape(
  shape: Record<string, { safeParseAsync?: (v: unknown) => Promise<{ success: boolean }> }>,
  value: unknown,
): Promise<boolean> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  for (const [key, schema] of Object.entries(shape)) {
    if (typeof schema?.safeParseAsync !== 'function') continue;
    if (!(await schema.safeParseAsync((value as Record<string, unknown>)[key])).success) return false;
  }
  return true;
}
