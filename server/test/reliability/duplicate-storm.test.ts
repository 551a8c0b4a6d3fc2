// Duplicate storm across processes: two service instances (each its own Express server on its own port, its own
// connection pool, channel accounts and in-process state) share one PostgreSQL database and one local Stellar
// network. 512 concurrent settles of ONE verified attempt are split across both. The contract: exactly one
// success, one settlement row, one receipt, one ledger transfer (the balances move once), and every other answer
// is the documented refusal of a second use of a payment, 409 REPLAY_DETECTED.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import http from 'node:http';
import type { Service } from '../../src/compose';
import { postJson, stormTally, type Answer } from './support/over-http';
import {
  fundedBuyer,
  paymentCase,
  secondService,
  sellerWithResource,
  sleep,
  startFacilitatorEnv,
  type FacilitatorEnv,
} from '../facilitator/helpers';

// Every request of the storm on its own connection at once: 256 sockets to each server (the agent's maxSockets).
// A larger storm adds only later waves, replays of a payment already claimed.
const STORM = 512;
/** Every instance sharing the database derives its channel accounts from one seed, as the facilitator requires. */
const FACILITATOR = {
  channelAccounts: 2,
  pollMs: 25,
  confirmGraceMs: 10_000,
  channelSeed: 'duplicate-storm-channel-seed',
};

async function listen(app: Service['app']): Promise<{ server: Server; base: string }> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('duplicate storm across two service instances on one database', () => {
  let env: FacilitatorEnv;
  let second: Service;
  const servers: Server[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

  beforeAll(async () => {
    env = await startFacilitatorEnv({ ledgerCloseMs: 200, facilitator: FACILITATOR });
    second = await secondService(env, FACILITATOR);
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    agent.destroy();
    await second?.close();
    await env?.stop();
  });

  // Filled by the storm, checked by the tests after it.
  let answers: Answer[] = [];
  let counts: { settlements: number; receipts: number } = { settlements: -1, receipts: -1 };
  const balances = { buyerBefore: '', buyerAfter: '', sellerBefore: '', sellerAfter: '' };

  it('sends 512 concurrent settles of one verified attempt, split across two servers on one database', async () => {
    // The storm's rate is the point here: the first instance gets a raised rate limit like the second.
    const first = await secondService(env, FACILITATOR);
    try {
      const a = await listen(first.app);
      const b = await listen(second.app);
      servers.push(a.server, b.server);

      const { seller, resource } = await sellerWithResource(env, '0.25');
      const buyer = await fundedBuyer(env, '10');
      const payTo = seller.wallet.publicKey();
      const c = await paymentCase(env, buyer, payTo, '0.25');
      const verified = await fetch(`${a.base}/v1/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paymentPayload: c.payload, paymentRequirements: c.requirements }),
      });
      expect(verified.status).toBe(200);
      const attemptId = ((await verified.json()) as { paymentAttemptId: string }).paymentAttemptId;
      const buyerBefore = env.network.balance(buyer.publicKey(), 'USDC');
      const sellerBefore = env.network.balance(payTo, 'USDC');

      const body = JSON.stringify({ paymentAttemptId: attemptId, paymentPayload: c.payload, resourceId: resource.id });
      answers = await Promise.all(
        Array.from({ length: STORM }, async (_, i) => {
          const base = i % 2 ? b.base : a.base;
          try {
            return await postJson(agent, `${base}/v1/settle`, body);
          } catch (err) {
            return { status: 0, body: { error: { code: `client: ${(err as Error).message}` } } } as Answer;
          }
        }),
      );

      // The database: one settlement row and one receipt for the attempt.
      const db = env.svc.db;
      [[counts]] = (await db.query(
        `SELECT (SELECT count(*)::int FROM settlements WHERE payment_attempt_id = :id) AS settlements,
                (SELECT count(*)::int FROM receipts WHERE payment_attempt_id = :id) AS receipts`,
        { replacements: { id: attemptId } },
      )) as [Array<{ settlements: number; receipts: number }>, unknown];
      // Wait (bounded) for the one settlement to be final on the ledger, then read the balances.
      for (let i = 0; i < 200; i++) {
        const [[row]] = (await db.query(`SELECT status FROM settlements WHERE payment_attempt_id = :id`, {
          replacements: { id: attemptId },
        })) as [Array<{ status: string }>, unknown];
        if (!row || row.status !== 'pending') break;
        await sleep(50);
      }

      balances.buyerBefore = buyerBefore;
      balances.sellerBefore = sellerBefore;
      balances.buyerAfter = env.network.balance(buyer.publicKey(), 'USDC');
      balances.sellerAfter = env.network.balance(payTo, 'USDC');
      expect(answers.length).toBe(STORM);
    } finally {
      await first.close();
    }
  }, 300_000);

  it('money moved once: one settlement row, one receipt, and the balances moved by exactly one payment', () => {
    expect(counts).toEqual({ settlements: 1, receipts: 1 });
    expect(balances).toEqual({
      buyerBefore: '10',
      buyerAfter: '9.75',
      sellerBefore: '0.0000001',
      sellerAfter: '0.2500001',
    });
  });

  it(
    'exactly one settle succeeds; every other answer is 409 REPLAY_DETECTED in the envelope (none is a 5xx, a ' +
      'timeout, or a second success)',
    () => {
      expect(stormTally(answers)).toEqual({ successes: 1, replays: STORM - 1, others: {} });
    },
  );
});
