/**
 * One channel pool for many processes (issue #14 item 3): two service instances on one database and one local
 * network, sharing channel accounts derived from one seed and leased through the database.
 */
import request from 'supertest';
import { createService, type Service } from '../../src/compose';
import { createLogger } from '../../src/logger';
import { createFacilitatorArea } from '../../src/areas/facilitator';
import type { AreaContext } from '../../src/areas/area';
import { createMetrics } from '../../src/metrics/registry';
import { OPERATOR_KEY, testNetworks } from '../support/test-service';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  sleep,
  startFacilitatorEnv,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';

const SEED = 'channel-pool-test-seed-0123456789abcdef';
/** These tests are about the shared lease table, not fair capacity: one seller may use the whole pool and wait in
 * numbers. */
const WHOLE_POOL = {
  channelsPerSeller: 2,
  channelsPerPayer: 2,
  channelsPerClient: 2,
  settleQueuePerSeller: 16,
  settleQueuePerPayer: 16,
  settleQueuePerClient: 16,
};

describe('one channel pool shared by two service instances through the database', () => {
  let env: FacilitatorEnv;
  let second: Service;
  let crashAfterSubmit = false;
  let payTo: string;
  let resourceId: string;
  let closer: NodeJS.Timeout | null = null;

  const networks = () =>
    testNetworks({
      rpcUrl: env.network.rpcUrl,
      assets: env.network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    });

  beforeAll(async () => {
    env = await startFacilitatorEnv({
      ledgerCloseMs: 0,
      // ledgerSeconds: the pace of the test's own closer (40 ms): it bounds how far ahead an authorization expires
      facilitator: {
        channelAccounts: 2,
        channelSeed: SEED,
        confirmGraceMs: 5_000,
        pollMs: 20,
        ledgerSeconds: 0.04,
        ...WHOLE_POOL,
      },
    });
    // The second instance knows only the first channel of the same seed: a channel both instances use.
    second = await createService({
      databaseUrl: env.svc.databaseUrl,
      environment: 'test',
      version: '0.0.0-test',
      commit: null,
      networks: networks(),
      operatorApiKey: OPERATOR_KEY,
      rateLimit: { points: 10_000, windowSeconds: 60 },
      bodyLimitBytes: 256 * 1024,
      responseValidation: true,
      logger: createLogger({ silent: true }),
      facilitator: {
        channelAccounts: 1,
        channelSeed: SEED,
        confirmGraceMs: 5_000,
        pollMs: 20,
        ledgerSeconds: 0.04,
        channelAcquireTimeoutMs: 60_000,
        ...WHOLE_POOL,
        afterSubmit: () => {
          if (crashAfterSubmit) throw new Error('simulated crash between submit and record');
        },
      },
    });
    const { seller, resource } = await sellerWithResource(env, '0.1');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
  });
  afterEach(() => {
    if (closer) clearInterval(closer);
    closer = null;
  });
  afterAll(async () => {
    await second?.close();
    await env.stop();
  });

  const settleOn = (svc: { app: Service['app'] }, id: string, c: PaymentCase) =>
    request(svc.app).post('/v1/settle').send({ paymentAttemptId: id, paymentPayload: c.payload, resourceId });
  async function verified(): Promise<{ c: PaymentCase; id: string; buyer: string }> {
    const buyer = await fundedBuyer(env, '1');
    // 600 ledgers of validity (24 s at the test's 40 ms ledgers): ten settles through two channels on a loaded
    // machine outlasted the default 50 (2 s) and answered AUTH_EXPIRED, which is not what this file tests.
    const c = await paymentCase(env, buyer, payTo, '0.1', {
      sign: { expiration: env.network.latestLedger() + 600 },
    });
    const v = await request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
    expect(v.status).toBe(200);
    return { c, id: v.body.paymentAttemptId, buyer: buyer.publicKey() };
  }
  const leases = async () =>
    (await env.svc.db.query('SELECT address, holder, transaction_hash FROM channel_leases ORDER BY address', {
      type: 'SELECT',
    })) as Array<Record<string, string | null>>;

  it('both instances register the same channel accounts in one lease table', async () => {
    const rows = await leases();
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.holder === null && r.transaction_hash === null)).toBe(true);
  });

  it(
    'when two instances settle in parallel, no channel carries two in-flight transactions: every settlement ' +
      'lands (no txBadSeq)',
    async () => {
      const payments = await Promise.all(Array.from({ length: 10 }, () => verified()));
      closer = setInterval(() => void env.network.closeLedger(), 40);
      const answers = await Promise.all(payments.map((p, i) => settleOn(i % 2 ? second : env.svc, p.id, p.c)));
      expect(answers.map((a) => a.body.error?.code ?? a.body.ok)).toEqual(Array(10).fill(true));
      for (let i = 0; i < 200; i++) {
        const open = await env.svc.db.query(`SELECT count(*)::int AS n FROM settlements WHERE status = 'pending'`, {
          plain: true,
          type: 'SELECT',
        });
        if ((open as { n: number }).n === 0) break;
        await sleep(25);
      }
      const statuses = (await env.svc.db.query('SELECT status, count(*)::int AS n FROM settlements GROUP BY status', {
        type: 'SELECT',
      })) as Array<{ status: string; n: number }>;
      expect(statuses).toEqual([{ status: 'settled', n: 10 }]);
      for (const p of payments) expect(env.network.balance(p.buyer, 'USDC')).toBe('0.9');
      const used = (await env.svc.db.query('SELECT DISTINCT channel_account FROM settlements', {
        type: 'SELECT',
      })) as Array<{ channel_account: string }>;
      const known = (await leases()).map((r) => r.address);
      expect(used.every((u) => known.includes(u.channel_account))).toBe(true);
      expect((await leases()).every((r) => r.holder === null && r.transaction_hash === null)).toBe(true);
    },
  );

  it(
    'a channel whose last transaction has an unknown fate is not handed out until the confirmation worker ' +
      'records its outcome',
    async () => {
      const crashed = await verified();
      crashAfterSubmit = true;
      const res = await settleOn(second, crashed.id, crashed.c);
      crashAfterSubmit = false;
      expect(res.status).toBe(500);
      const pinned = (await leases()).filter((r) => r.transaction_hash !== null);
      expect(pinned).toHaveLength(1);
      await env.network.closeLedger(); // the transaction lands, but no process has recorded it

      // The second instance knows only that channel: it is not handed out, so its next settle waits without sending.
      const blocked = await verified();
      let answered = false;
      const waiting = settleOn(second, blocked.id, blocked.c).then((r) => {
        answered = true;
        return r;
      });
      for (let i = 0; i < 50; i++) {
        await sleep(20);
        const claimed = await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
          replacements: { id: blocked.id },
          plain: true,
          type: 'SELECT',
        });
        if ((claimed as { status: string }).status === 'settlement_pending') break;
      }
      await sleep(300);
      expect(answered).toBe(false);
      expect(
        await env.svc.db.query('SELECT count(*)::int AS n FROM settlements WHERE payment_attempt_id = :id', {
          replacements: { id: blocked.id },
          plain: true,
          type: 'SELECT',
        }),
      ).toEqual({ n: 0 });
      expect((await leases()).filter((r) => r.transaction_hash !== null)).toEqual(pinned);

      // The confirmation worker (any process) records the landed transaction: the channel is free again.
      const worker = otherArea().workers.find((w) => w.name === 'settlement-confirmation-worker')!;
      await worker.run({ olderThanSeconds: 0 });
      expect(env.network.balance(crashed.buyer, 'USDC')).toBe('0.9');
      closer = setInterval(() => void env.network.closeLedger(), 40);
      const ok = await waiting;
      expect(ok.body.ok).toBe(true);
      expect(env.network.balance(blocked.buyer, 'USDC')).toBe('0.9');
      expect(
        await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
          replacements: { id: crashed.id },
          plain: true,
          type: 'SELECT',
        }),
      ).toEqual({ status: 'settled' });
    },
  );

  function otherArea() {
    const ctx = {
      db: env.svc.db,
      networks: networks(),
      metrics: createMetrics('test'),
      logger: createLogger({ silent: true }),
    } as unknown as AreaContext;
    return createFacilitatorArea(ctx);
  }
});
