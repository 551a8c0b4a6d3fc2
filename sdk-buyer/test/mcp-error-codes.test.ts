/**
 * Issue 32: every error an agent can get from the marketplace MCP server (the stdio bin, createMarketplaceMcpServer,
 * the service's /mcp) carries one of the documented codes (MCP_TOOL_ERROR_CODES, sdk-buyer/README.md "Error codes of
 * the MCP tools"). Pure: an error in, a tool error out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiError } from '../src/core/errors';
import { BudgetExceededError } from '../src/payments/budget';
import { PaymentFailedError } from '../src/payments/pay-and-fetch';
import { MCP_TOOL_ERROR_CODES, ToolError, toToolError } from '../src/mcp/marketplace-server';

const README = fs.readFileSync(path.resolve(__dirname, '../README.md'), 'utf8');
const section = README.slice(
  README.indexOf('**Error codes of the MCP tools.**'),
  README.indexOf('**Run it for Claude Desktop'),
);

describe('the error codes of the MCP tools', () => {
  it(
    "every code of MCP_TOOL_ERROR_CODES beyond the API's is in " + "the README's table, and the table names no other",
    () => {
      expect(section.length).toBeGreaterThan(100);
      const own = MCP_TOOL_ERROR_CODES.filter((c) => !API_CODES.has(c));
      for (const code of own)
        expect({ code, documented: section.includes(`\`${code}\``) }).toEqual({ code, documented: true });
      const named = [...section.matchAll(/^\| `([A-Z_]+)`(?: \/ `([A-Z_]+)`)*(?: \/ `([A-Z_]+)`)? \|/gm)].flatMap((m) =>
        m.slice(1).filter(Boolean),
      );
      for (const code of named) expect(MCP_TOOL_ERROR_CODES).toContain(code);
    },
  );

  it(
    "a hostile seller's made-up refusal code reaches the agent as PAYMENT_REJECTED, its own code kept in " +
      'details.reportedCode',
    () => {
      const e = toToolError(
        new PaymentFailedError('Payment for http://shop.test/x was refused: nope', 'GIVE_ME_MORE_MONEY', 402, {}),
      );
      expect({ code: e.code, details: e.details }).toEqual({
        code: 'PAYMENT_REJECTED',
        details: { reportedCode: 'GIVE_ME_MORE_MONEY' },
      });
    },
  );

  it(
    'a facilitator refusal the seller relays keeps its API code (TRUSTLINE_REQUIRED), and a budget refusal is ' +
      'BUDGET_EXCEEDED',
    () => {
      expect(
        toToolError(
          new PaymentFailedError(
            'Payment was refused: your wallet has no USDC trustline',
            'TRUSTLINE_REQUIRED',
            402,
            {},
          ),
        ).code,
      ).toBe('TRUSTLINE_REQUIRED');
      expect(toToolError(new BudgetExceededError('over the per-call budget', '0.5', '0.1', 'perCall')).code).toBe(
        'BUDGET_EXCEEDED',
      );
    },
  );

  it(
    "the SDK's transport codes are documented; an unknown code of any other error becomes UPSTREAM_ERROR; a " +
      'plain crash is INTERNAL_ERROR without its text',
    () => {
      expect(
        toToolError(
          new ApiError({
            status: 0,
            code: 'NETWORK_ERROR',
            message: 'fetch failed',
            method: 'GET',
            url: 'http://127.0.0.1:1/v1/resources/x',
          }),
        ).code,
      ).toBe('NETWORK_ERROR');
      expect(toToolError(new ToolError('SOMETHING_NEW', 'a seller said so')).code).toBe('UPSTREAM_ERROR');
      const crash = toToolError(new Error('secret path /home/me/.key'));
      expect({ code: crash.code, message: crash.message }).toEqual({
        code: 'INTERNAL_ERROR',
        message: 'The tool failed unexpectedly',
      });
    },
  );
});

/** The API's ErrorCode enum, read from the generated contract types. */
const API_CODES = new Set(
  /ErrorCode: ("[^;]*);/
    .exec(fs.readFileSync(path.resolve(__dirname, '../src/generated/openapi.ts'), 'utf8'))![1]
    .split('|')
    .map((c) => c.trim().replace(/"/g, '')),
);
