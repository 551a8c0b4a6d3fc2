// x402 `settlement_pending` across a restart (issue #30; x402-settlement-pending.test.ts has the two-process
// scenarios and says what the fixture, support/x402-pending.ts, stands for): the process that answered
// settlement_pending is killed (SIGKILL) and another started on the same database before the stock retry; the retry
// on the restarted process reconciles the transaction already submitted from what the database kept.
import { startMainProcess } from './support/main-process';
import { retryable, settle, startPendingFixture, type PendingFixture } from './support/x402-pending';

describe('x402 settlement_pending: the retry after a restart reconciles the submitted transaction', () => {
  let f: PendingFixture;

  beforeAll(async () => {
    f = await startPendingFixture(1);
  }, 180_000);

  afterAll(async () => {
    await f?.stop();
  });

  it(
    'the process that answered settlement_pending is killed and restarted: the retry on the restarted process ' +
      'gets the final answer, nothing broadcast again',
    async () => {
      const { buyer, body } = await f.x402Payment();
      const sentBefore = f.rpc.state.sent;
      const { first } = await f.pendingOn(f.mains[0].baseUrl, body);
      expect(retryable(first.body)).toBe(true);
      const killed = f.mains.shift()!;
      await killed.cleanup(); // SIGKILL
      const restarted = await startMainProcess({ databaseUrl: f.databaseUrl, env: f.env });
      f.mains.push(restarted);
      const retry = await settle(restarted.baseUrl, body);
      expect(retry.body).toMatchObject({ success: true, transaction: first.body.transaction });
      expect(f.rpc.state.sent - sentBefore).toBe(1);
      expect(f.network.balance(buyer.publicKey(), 'USDC')).toBe('0.75');
    },
    240_000,
  );
});
