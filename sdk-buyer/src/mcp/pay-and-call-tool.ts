/**
 * payAndCallTool: call a paid MCP tool (a seller's `paidTool`, or any server speaking the x402 MCP transport,
 * https://github.com/coinbase/x402 specs/transports-v2/mcp.md) through the stock MCP `Client`, paying within the
 * same budgets as payAndFetch.
 *
 * 1. The tool is called as is. A result that carries no PaymentRequired is returned unpaid.
 * 2. Payment required is read, in this order, from: `structuredContent` (the PaymentRequired itself, or wrapped as
 *    `{"x402/error": {code: 402, data}}`), `content[0].text` (JSON of either), or, for older servers, a JSON-RPC
 *    error with code 402 and the PaymentRequired in `error.data`. The first `exact` Stellar requirement is taken.
 * 3. The budget is committed (BudgetExceededError before anything is signed), the authorization is signed (the same
 *    signer and code as payAndFetch) and the same call is sent again with the payload in
 *    `params._meta["x402/payment"]`: our PaymentPayload plus the x402 v2 envelope fields (`x402Version`,
 *    `accepted`, `resource`).
 * 4. The settlement is read from `result._meta["x402/payment-response"]` (the commitment becomes spent). Without
 *    one the commitment keeps counting until the ledger proves the authorization unusable (payments/budget.ts): the
 *    server holds a signature it could still settle. A second PaymentRequired (refused payment, failed
 *    settlement) throws PaymentFailedError with the seller's code.
 *
 * Both calls go through `client.request` with the CallToolResult schema, so a PaymentRequired is not mistaken for a
 * breach of the tool's output schema (the stock `callTool` checks `structuredContent` even on errors).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readPaymentRequired, type NormalizedRequirements } from '../payments/requirements.js';
import type { PaymentPayload } from '../payments/sign-payment.js';
import {
  PaymentFailedError,
  chooseRequirement,
  commitAndSign,
  termsProblem,
  withAssetCode,
  type ExpectedTerms,
  type PayerDeps,
  type PaymentReceiptHeader,
} from '../payments/pay-and-fetch.js';

export const X402_PAYMENT_META = 'x402/payment';
export const X402_PAYMENT_RESPONSE_META = 'x402/payment-response';
/** JSON-RPC error code of a payment-required answer (older servers). */
export const X402_PAYMENT_REQUIRED_CODE = 402;

export interface PayAndCallToolOptions {
  /** Most this call may pay (decimal); overrides the client's per-call budget. */
  maxAmount?: string;
  /** Per-request timeout of each MCP call (ms). Default: the MCP SDK's (60 s). */
  timeoutMs?: number;
  /** Refuse (TERMS_CHANGED, before signing) unless the tool's PaymentRequired matches these terms. */
  expect?: ExpectedTerms;
}

export interface PaidToolCallResult {
  /** The tool's answer (the paid one when a payment was made). */
  result: CallToolResult;
  /** True when a payment was sent and the server settled it (`_meta["x402/payment-response"]` came back). */
  paid: boolean;
  receipt: PaymentReceiptHeader | null;
  payment: PaymentPayload | null;
  requirements: NormalizedRequirements | null;
}

type Payer = Omit<PayerDeps, 'fetch'>;
type PaymentRequiredDoc = Record<string, unknown> & { accepts: unknown[] };

const isPaymentRequired = (v: unknown): v is PaymentRequiredDoc =>
  !!v &&
  typeof v === 'object' &&
  Array.isArray((v as { accepts?: unknown }).accepts) &&
  typeof (v as { x402Version?: unknown }).x402Version === 'number';

function unwrap(v: unknown): PaymentRequiredDoc | null {
  if (isPaymentRequired(v)) return v;
  const wrapped = v && typeof v === 'object' ? (v as Record<string, unknown>)['x402/error'] : undefined;
  const data = wrapped && typeof wrapped === 'object' ? (wrapped as { data?: unknown }).data : undefined;
  return isPaymentRequired(data) ? data : null;
}

/** The x402 PaymentRequired of a tool result, or null (see the module comment for the order). */
export function paymentRequiredOf(result: CallToolResult): PaymentRequiredDoc | null {
  if (!result.isError) return null;
  const structured = unwrap(result.structuredContent);
  if (structured) return structured;
  const first = result.content?.[0];
  if (first?.type === 'text' && first.text.length <= 1_000_000) {
    try {
      return unwrap(JSON.parse(first.text));
    } catch {
      return null;
    }
  }
  return null;
}

/** The settlement of a paid result (`_meta["x402/payment-response"]`), when it names a transaction. */
export function paymentResponseOf(result: CallToolResult): PaymentReceiptHeader | null {
  const doc = result._meta?.[X402_PAYMENT_RESPONSE_META] as Record<string, unknown> | undefined;
  if (!doc || typeof doc !== 'object' || doc.success === false) return null;
  const transactionHash = (doc.transactionHash ?? doc.transaction) as unknown;
  if (typeof transactionHash !== 'string' || !/^[0-9a-f]{64}$/i.test(transactionHash)) return null;
  return { ...doc, transactionHash } as PaymentReceiptHeader;
}

async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown> | undefined,
  timeoutMs?: number,
): Promise<{ result: CallToolResult } | { paymentRequired: PaymentRequiredDoc }> {
  try {
    const params = { name, arguments: args, ...(meta ? { _meta: meta } : {}) };
    const result = (await client.request(
      { method: 'tools/call', params },
      CallToolResultSchema,
      timeoutMs ? { timeout: timeoutMs } : undefined,
    )) as CallToolResult;
    return { result };
  } catch (err) {
    if (err instanceof McpError && err.code === X402_PAYMENT_REQUIRED_CODE && isPaymentRequired(err.data))
      return { paymentRequired: err.data };
    throw err;
  }
}

function refusalCode(doc: PaymentRequiredDoc): { code: string; message: string } {
  const error = doc.error as unknown;
  const nested = doc['x402/payment-response'] as { errorReason?: unknown } | undefined;
  const code =
    typeof error === 'string' && /^[A-Z_]{3,64}$/.test(error)
      ? error
      : typeof nested?.errorReason === 'string'
        ? nested.errorReason
        : 'PAYMENT_REJECTED';
  const message =
    typeof doc.message === 'string'
      ? doc.message
      : typeof error === 'string'
        ? error
        : `the server refused the payment (${code})`;
  return { code, message };
}

export function createPayAndCallTool(deps: Payer) {
  return async function payAndCallTool(
    client: Client,
    name: string,
    args: Record<string, unknown> = {},
    options: PayAndCallToolOptions = {},
  ): Promise<PaidToolCallResult> {
    const first = await callTool(client, name, args, undefined, options.timeoutMs);
    const offered = 'paymentRequired' in first ? first.paymentRequired : paymentRequiredOf(first.result);
    if (!offered)
      return {
        result: (first as { result: CallToolResult }).result,
        paid: false,
        receipt: null,
        payment: null,
        requirements: null,
      };

    const parsed = readPaymentRequired(new Headers(), offered);
    let requirements = chooseRequirement(parsed, options.expect, offered, `tool ${name}`);
    if (!requirements)
      throw new PaymentFailedError(
        `Tool ${name} asks for a payment this SDK cannot make (no exact Stellar requirement)`,
        'NO_PAYABLE_REQUIREMENT',
        402,
        offered,
      );
    requirements = await withAssetCode(deps, requirements, offered);
    if (options.expect && termsProblem(requirements, options.expect))
      throw new PaymentFailedError(
        `Refused before signing: tool ${name} asks for other terms than inspected ` +
          `(${termsProblem(requirements, options.expect)})`,
        'TERMS_CHANGED',
        402,
        offered,
      );

    const { payment, commitment } = await commitAndSign(deps, requirements, options.maxAmount);
    const meta = {
      [X402_PAYMENT_META]: {
        ...payment,
        x402Version: parsed!.x402Version,
        accepted: requirements.raw,
        ...(offered.resource ? { resource: offered.resource } : {}),
      },
    };
    // The signature is out: it stays counted until settled or proven unusable (see payments/budget.ts).
    const second = await callTool(client, name, args, meta, options.timeoutMs);
    const refused = 'paymentRequired' in second ? second.paymentRequired : paymentRequiredOf(second.result);
    if (refused) {
      const { code, message } = refusalCode(refused);
      throw new PaymentFailedError(`Payment for tool ${name} was refused: ${message}`, code, 402, refused);
    }
    const result = (second as { result: CallToolResult }).result;
    const receipt = paymentResponseOf(result);
    if (receipt) await deps.budget.settled(commitment, receipt.transactionHash);
    return { result, paid: receipt !== null, receipt, payment, requirements };
  };
}

export type PayAndCallTool = ReturnType<typeof createPayAndCallTool>;

/**
 * The standalone form: `payAndCallTool(mcpClient, 'forecast', { city: 'Lisbon' }, { buyer })` pays with the buyer
 * client's signer and within its budget (`buyer.payAndCallTool` is the same call).
 */
export function payAndCallTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options: PayAndCallToolOptions & { buyer: { payAndCallTool: PayAndCallTool } },
): Promise<PaidToolCallResult> {
  const { buyer, ...rest } = options;
  return buyer.payAndCallTool(client, name, args, rest);
}
