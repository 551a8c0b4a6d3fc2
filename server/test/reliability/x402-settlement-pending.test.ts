// x402 `settlement_pending` the standard way (issue #30; x402 spec v2, @x402/core >= 2.24 `settleWithPendingRetry`):
// when the ledger RPC stalls past a settlement's time bound, /x402/settle answers a non-terminal `success: false`,
// `errorReason: settlement_pending` carrying the submitted `transaction` and `network`; the stock resource server then
// settles the same payload once more, and that retry reconciles the transaction already submitted and gets the final
// answer. Two `server/src/main.ts` processes share one database; the local network runs in the test process behind an
// RPC front that can stall `getTransaction` (an RPC that hangs on the question "did it land?") and counts every
// `sendTransaction` (nothing may be broadcast twice); the fixture is support/x402-pending.ts. Scenarios here: the
// retry lands on the other process; a replay races the retry. The process that answered pending killed and restarted
// before the retry: x402-settlement-pending-restart.test.ts (a file of its own, so the serial run's two workers share
// the scenarios).
import { HTTPFacilitatorClient } from '@x402/core/server';
import { loadConfig } from '../../src/config';
import { retryable, settle, startPendingFixture, type PendingFixture, type SettleBody } from './support/x402-pending';

type Payload = Parameters<HTTPFacilitatorClient['settle']>[0];
type Requirements = Parameters<HTTPFacilitatorClient['settle']>[1];

/**
 * 2.27's `settleWithPendingRetry` over stock HTTPFacilitatorClients (the installed 2.9 client: the same HTTP call): one
 * settle, then exactly one retry of the identical payload when the answer is retryable, here through another process.
 */
async function stockSettleWithPendingRetry(
  first: HTTPFacilitatorClient,
  retry: HTTPFacilitatorClient,
  payload: Payload,
  requirements: Requirements,
) {
  const answer = await first.settle(payload, requirements);
  return { first: answer, final: retryable(answer as SettleBody) ? await retry.settle(payload, requirements) : answer };
}

describe(
  "x402 settlement_pending: the same payload's retry reconciles the submitted transaction (two " + 'processes)',
  () => {
    let f: PendingFixture;

    beforeAll(async () => {
      f = await startPendingFixture(2);
    }, 180_000);

    afterAll(async () => {
      await f?.stop();
    });

    it(
      'answers settlement_pending (200, non-empty transaction and network); the stock retry on the other process ' +
        'gets success with the same transaction; a later replay is a duplicate; one broadcast, money moved once',
      async () => {
        const [a, b] = f.mains;
        const { buyer, body } = await f.x402Payment();
        f.rpc.state.stall = true;
        // The RPC comes back while the first settle still waits: its answer is already past the time bound and the
        // grace.
        const stockA = new HTTPFacilitatorClient({ url: `${a.baseUrl}/x402` });
        const stockB = new HTTPFacilitatorClient({ url: `${b.baseUrl}/x402` });
        const firstSettle = stockA
          .settle(body.paymentPayload as unknown as Payload, body.paymentRequirements as unknown as Requirements)
          .then((answer) => {
            f.rpc.state.stall = false;
            return answer;
          });
        const { first, final } = await stockSettleWithPendingRetry(
          { settle: () => firstSettle } as unknown as HTTPFacilitatorClient,
          stockB,
          body.paymentPayload as unknown as Payload,
          body.paymentRequirements as unknown as Requirements,
        );
        expect(first).toMatchObject({
          success: false,
          errorReason: 'settlement_pending',
          network: 'stellar:testnet',
          transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
        });
        expect(final).toMatchObject({
          success: true,
          transaction: first.transaction,
          network: 'stellar:testnet',
          payer: buyer.publicKey(),
        });
        const raw = await settle(a.baseUrl, body);
        expect(raw.body).toMatchObject({ success: false, errorReason: 'duplicate_settlement', transaction: '' });
        expect(f.rpc.state.sent).toBe(1);
        expect(f.network.balance(buyer.publicKey(), 'USDC')).toBe('0.75');
      },
      240_000,
    );

    it(
      'a replay racing the retry (one to each process): exactly one final success, the other a duplicate; nothing ' +
        'broadcast again',
      async () => {
        const [a, b] = f.mains;
        const { buyer, body } = await f.x402Payment();
        const sentBefore = f.rpc.state.sent;
        const { first } = await f.pendingOn(b.baseUrl, body);
        // Over HTTP the pending answer is a 200 SettleResponse (a stock client parses any 2xx as an answer, not an
        // error).
        expect(first.status).toBe(200);
        expect(retryable(first.body)).toBe(true);
        const answers = await Promise.all([settle(a.baseUrl, body), settle(b.baseUrl, body)]);
        const successes = answers.filter((x) => x.body.success);
        expect(successes).toHaveLength(1);
        expect(successes[0].body.transaction).toBe(first.body.transaction);
        expect(answers.filter((x) => x.body.errorReason === 'duplicate_settlement')).toHaveLength(1);
        expect(f.rpc.state.sent - sentBefore).toBe(1);
        expect(f.network.balance(buyer.publicKey(), 'USDC')).toBe('0.75');
      },
      180_000,
    );
  },
);

describe('SETTLEMENT_CONFIRM_GRACE_MS: the confirmation grace past the time bound', () => {
  it('defaults to 10 s, reads milliseconds, and refuses a grace a retry could not ask the ledger within', () => {
    const local = { LOCAL_NETWORK: 'true' };
    expect(loadConfig(local).facilitator.confirmGraceMs).toBe(10_000);
    expect(loadConfig({ ...local, SETTLEMENT_CONFIRM_GRACE_MS: '2000' }).facilitator.confirmGraceMs).toBe(2000);
    for (const bad of ['0', '999', '300001', '2s'])
      expect(() => loadConfig({ ...local, SETTLEMENT_CONFIRM_GRACE_MS: bad })).toThrow(
        /SETTLEMENT_CONFIRM_GRACE_MS must be an integer from 1000 to 300000/,
      );
  });
});
