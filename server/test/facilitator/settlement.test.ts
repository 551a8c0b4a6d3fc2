import request from 'supertest';
import { Asset, Operation, TransactionBuilder, rpc, type Keypair } from '@stellar/stellar-sdk';
import { createFacilitatorArea } from '../../src/areas/facilitator';
import type { AreaContext } from '../../src/areas/area';
import { createMetrics } from '../../src/metrics/registry';
import { createLogger } from '../../src/logger';
import {
  facilitatorWorker,
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  startFacilitatorEnv,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';

/** A second instance of the facilitator area on the same database and network: "another process" after a crash. */
function otherProcess(env: FacilitatorEnv) {
  const metrics = createMetrics('test');
  const ctx = {
    db: env.svc.db,
    networks: (env.svc as unknown as { networks?: unknown }).networks,
    metrics,
    logger: createLogger({ silent: true }),
  } as unknown as AreaContext;
  return { metrics, ctx };
}

async function metricValue(
  registry: { getSingleMetricAsString(name: string): Promise<string> },
  name: string,
  label: string,
): Promise<number> {
  const text = await registry.getSingleMetricAsString(name);
  const line = text.split('\n').find((l) => l.startsWith(name) && l.includes(label));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('facilitator settlement: concurrency, pending answers, ledger failures and crash recovery', () => {
  let env: FacilitatorEnv;
  let crashAfterSubmit = false;
  let payTo: string;
  let resourceId: string;
  let closer: NodeJS.Timeout | null = null;

  const closeLedgersEvery = (ms: number) => {
    closer = setInterval(() => void env.network.closeLedger(), ms);
  };
  const stopClosing = () => {
    if (closer) clearInterval(closer);
    closer = null;
  };

  beforeAll(async () => {
    env = await startFacilitatorEnv({
      ledgerCloseMs: 0,
      facilitator: {
        channelAccounts: 4,
        confirmGraceMs: 1_000,
        txTimeoutSeconds: 5,
        pollMs: 20,
        afterSubmit: () => {
          if (crashAfterSubmit) throw new Error('simulated crash between submit and record');
        },
      },
    });
    const { seller, resource } = await sellerWithResource(env, '0.5');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
  });
  afterEach(stopClosing);
  afterAll(() => env.stop());

  const verify = (c: PaymentCase) =>
    request(env.svc.app).post('/v1/verify').send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
  const settle = (id: string, c: PaymentCase) =>
    request(env.svc.app).post('/v1/settle').send({ paymentAttemptId: id, paymentPayload: c.payload, resourceId });
  const count = async (sql: string, replacements: Record<string, unknown>) =>
    Number(((await env.svc.db.query(sql, { replacements, plain: true })) as { n: string }).n);

  async function verified(buyer: Keypair): Promise<{ c: PaymentCase; id: string }> {
    const c = await paymentCase(env, buyer, payTo, '0.5');
    const v = await verify(c);
    expect(v.status).toBe(200);
    return { c, id: v.body.paymentAttemptId };
  }

  it(
    'when 50 requests settle one payment in parallel, exactly one succeeds and 49 get REPLAY_DETECTED: one ' +
      'transaction, one settlement row',
    async () => {
      const buyer = await fundedBuyer(env, '3');
      const { c, id } = await verified(buyer);
      const sendsBefore = await metricValue(
        env.svc.metrics.registry,
        'ledger_rpc_requests_total',
        'method="sendTransaction"',
      );
      closeLedgersEvery(30);
      const answers = await Promise.all(Array.from({ length: 50 }, () => settle(id, c)));
      stopClosing();
      const winners = answers.filter((a) => a.body.ok === true);
      expect(winners).toHaveLength(1);
      expect([200, 202]).toContain(winners[0].status);
      const losers = answers.filter((a) => a.body.ok !== true);
      expect(losers).toHaveLength(49);
      expect(losers.every((a) => a.status === 409 && a.body.error.code === 'REPLAY_DETECTED')).toBe(true);
      expect(await count('SELECT count(*) AS n FROM settlements WHERE payment_attempt_id = :id', { id })).toBe(1);
      expect(await count('SELECT count(*) AS n FROM receipts WHERE payment_attempt_id = :id', { id })).toBe(1);
      expect(await metricValue(env.svc.metrics.registry, 'ledger_rpc_requests_total', 'method="sendTransaction"')).toBe(
        sendsBefore + 1,
      );
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('2.5');
    },
  );

  it(
    "when no ledger closes within the transaction's time bound and the grace, settle answers 202 " +
      'settlement_pending; once a ledger closes past the bound the transaction can never land: the confirmation ' +
      'worker fails it, frees its channel, and a later settle is a replay',
    async () => {
      const buyer = await fundedBuyer(env, '1');
      const { c, id } = await verified(buyer);
      const res = await settle(id, c); // no ledger closes: the ledger cannot tell within 5 s + 1 s
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({
        ok: true,
        status: 'settlement_pending',
        ledger: null,
        evidence: 'pending_settlement',
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      const pending = await request(env.svc.app).get(`/v1/settlements/${res.body.transactionHash}`);
      expect(pending.body).toMatchObject({ status: 'pending', ledger: null, evidence: 'pending_settlement' });
      await env.network.closeLedger(); // closes past the time bound: the queued transaction is dropped
      const worker = facilitatorWorker(env, 'settlement-confirmation-worker');
      await worker.run({ olderThanSeconds: 0 });
      const settlement = await request(env.svc.app).get(`/v1/settlements/${res.body.transactionHash}`);
      expect(settlement.body).toMatchObject({ status: 'failed' });
      expect(
        await count('SELECT count(*) AS n FROM channel_leases WHERE transaction_hash = :h', {
          h: res.body.transactionHash,
        }),
      ).toBe(0);
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('1');
      const again = await settle(id, c);
      expect(again.status).toBe(502);
      expect(again.body.error.code).toBe('SETTLEMENT_FAILED');
    },
  );

  it(
    'when the payer spent the money after verify, settle simulates again and refuses with INSUFFICIENT_BALANCE ' +
      'before claiming: nothing is submitted and the attempt stays verified',
    async () => {
      const buyer = await fundedBuyer(env, '1');
      const { c, id } = await verified(buyer);
      const server = new rpc.Server(env.network.rpcUrl, { allowHttp: true });
      const spend = new TransactionBuilder(await server.getAccount(buyer.publicKey()), {
        fee: '100',
        networkPassphrase: env.network.networkPassphrase,
      })
        .addOperation(
          Operation.payment({ destination: payTo, asset: new Asset('USDC', env.usdc.issuer), amount: '0.8' }),
        )
        .setTimeout(60)
        .build();
      spend.sign(buyer);
      expect((await server.sendTransaction(spend)).status).toBe('PENDING');
      await env.network.closeLedger();
      const res = await settle(id, c);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('INSUFFICIENT_BALANCE');
      expect(res.body.error.details[0]).toMatchObject({ code: 'simulation.succeeds' });
      const attempt = (await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id },
        plain: true,
      })) as Record<string, string>;
      expect(attempt).toMatchObject({ status: 'verified' });
      expect(await count('SELECT count(*) AS n FROM settlements WHERE payment_attempt_id = :id', { id })).toBe(0);
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('0.2');
    },
  );

  it(
    'when a submitted transaction FAILED on the ledger, the confirmation records settlement and receipt failed ' +
      '(failed_settlement) with the result code',
    async () => {
      const buyer = await fundedBuyer(env, '1');
      const { id } = await verified(buyer);
      // As if this process claimed the attempt, recorded the pending settlement and submitted a transaction that then
      // failed on the ledger: an underfunded classic payment from the buyer gives a real txFailed result.
      const server = new rpc.Server(env.network.rpcUrl, { allowHttp: true });
      const failing = new TransactionBuilder(await server.getAccount(buyer.publicKey()), {
        fee: '100',
        networkPassphrase: env.network.networkPassphrase,
      })
        .addOperation(
          Operation.payment({ destination: payTo, asset: new Asset('USDC', env.usdc.issuer), amount: '50' }),
        )
        .setTimeout(60)
        .build();
      failing.sign(buyer);
      const hash = failing.hash().toString('hex');
      await env.svc.db.query(
        `UPDATE payment_attempts SET status = 'settlement_pending', resource_id = :resourceId,
      seller_id = (SELECT seller_id FROM resources WHERE id = :resourceId), version_id = (SELECT
        current_version_id FROM resources WHERE id = :resourceId) WHERE id = :id`,
        { replacements: { id, resourceId } },
      );
      await env.svc.db.query(
        `INSERT INTO settlements (id, payment_attempt_id, transaction_hash, network, amount, asset_code,
        asset_issuer, status, evidence)
      SELECT 'stl_01JD7A1C5D6E7F8G9H0J1K2M3N', id, :hash, network, amount, asset_code, asset_issuer,
        'pending', 'pending_settlement' FROM payment_attempts WHERE id = :id`,
        { replacements: { id, hash } },
      );
      await env.svc.db.query(
        `INSERT INTO receipts (id, payment_attempt_id, settlement_id, resource_id, version_id, seller_id,
        transaction_hash, network, amount, asset_code, asset_issuer, status, evidence)
      SELECT 'rcp_01JD7A1C5E0F1G2H3J4K5M6N7P', id, 'stl_01JD7A1C5D6E7F8G9H0J1K2M3N', resource_id,
        version_id, seller_id, :hash, network, amount, asset_code, asset_issuer, 'pending', 'pending_settlement'
        FROM payment_attempts WHERE id = :id`,
        { replacements: { id, hash } },
      );
      expect((await server.sendTransaction(failing)).status).toBe('PENDING');
      await env.network.closeLedger();

      const { ctx } = otherProcess(env);
      (ctx as { networks: unknown }).networks = networksOf(env);
      await createFacilitatorArea(ctx)
        .workers.find((w) => w.name === 'settlement-confirmation-worker')!
        .run({ olderThanSeconds: 0 });
      const attempt = (await env.svc.db.query(
        'SELECT status, failure_code, failure_reason FROM payment_attempts WHERE id = :id',
        { replacements: { id }, plain: true },
      )) as Record<string, string>;
      expect(attempt).toMatchObject({
        status: 'settlement_failed',
        failure_code: 'SETTLEMENT_FAILED',
        failure_reason: expect.stringMatching(/^txFailed/),
      });
      const settlement = await request(env.svc.app).get(`/v1/settlements/${hash}`);
      expect(settlement.body).toMatchObject({ status: 'failed', evidence: 'failed_settlement' });
      const receipt = await request(env.svc.app).get('/v1/receipts/rcp_01JD7A1C5E0F1G2H3J4K5M6N7P');
      expect(receipt.body).toMatchObject({
        status: 'failed',
        evidence: 'failed_settlement',
        failureCode: 'SETTLEMENT_FAILED',
        failureReason: expect.stringMatching(/^txFailed/),
      });
    },
  );

  it(
    'after a crash between submit and record, the confirmation worker completes the settlement without ' +
      'resubmitting',
    async () => {
      const buyer = await fundedBuyer(env, '1');
      const { c, id } = await verified(buyer);
      crashAfterSubmit = true;
      const res = await settle(id, c);
      crashAfterSubmit = false;
      expect(res.status).toBe(500);
      const row = (await env.svc.db.query(
        'SELECT id, status, transaction_hash FROM settlements WHERE payment_attempt_id = :id',
        { replacements: { id }, plain: true },
      )) as Record<string, string>;
      expect(row.status).toBe('pending');
      await env.network.closeLedger();
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('0.5');

      // A fresh process (its own area, metrics and channel pool: none) runs the worker.
      const { metrics, ctx } = otherProcess(env);
      (ctx as { networks: unknown }).networks = networksOf(env);
      const area = createFacilitatorArea(ctx, { confirmationWorkerAgeSeconds: 0 });
      const worker = area.workers.find((w) => w.name === 'settlement-confirmation-worker')!;
      await worker.run({ olderThanSeconds: 0 });
      await worker.run({ olderThanSeconds: 0 }); // idempotent

      const attempt = (await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id },
        plain: true,
      })) as Record<string, string>;
      expect(attempt.status).toBe('settled');
      const settlement = await request(env.svc.app).get(`/v1/settlements/${row.transaction_hash}`);
      expect(settlement.body).toMatchObject({
        status: 'settled',
        evidence: 'local_simulation',
        ledger: expect.any(Number),
      });
      const receipt = (await env.svc.db.query('SELECT status, evidence FROM receipts WHERE payment_attempt_id = :id', {
        replacements: { id },
        plain: true,
      })) as Record<string, string>;
      expect(receipt).toEqual({ status: 'settled', evidence: 'local_simulation' });
      expect(await metricValue(metrics.registry, 'ledger_rpc_requests_total', 'method="sendTransaction"')).toBe(0);
      expect(
        await metricValue(metrics.registry, 'ledger_rpc_requests_total', 'method="getTransaction"'),
      ).toBeGreaterThanOrEqual(1);
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('0.5');
      const retry = await settle(id, c);
      expect(retry.status).toBe(409);
      expect(retry.body.error.code).toBe('REPLAY_DETECTED');
    },
  );

  it(
    'the stale-payment cleanup expires verified attempts past their ledger, and the receipt finalizer restores a ' +
      'missing receipt',
    async () => {
      const buyer = await fundedBuyer(env, '2');
      const c = await paymentCase(env, buyer, payTo, '0.5', { sign: { expiration: env.network.latestLedger() + 2 } });
      const v = await verify(c);
      expect(v.status).toBe(200);
      for (let i = 0; i < 3; i++) await env.network.closeLedger();
      const { ctx } = otherProcess(env);
      (ctx as { networks: unknown }).networks = networksOf(env);
      const area = createFacilitatorArea(ctx);
      await area.workers.find((w) => w.name === 'stale-payment-cleanup-worker')!.run({});
      const expired = (await env.svc.db.query('SELECT status, failure_code FROM payment_attempts WHERE id = :id', {
        replacements: { id: v.body.paymentAttemptId },
        plain: true,
      })) as Record<string, string>;
      expect(expired).toEqual({ status: 'expired', failure_code: 'AUTH_EXPIRED' });

      const { c: c2, id } = await verified(buyer);
      closeLedgersEvery(30);
      const settled = await settle(id, c2);
      stopClosing();
      expect(settled.status).toBe(200);
      await env.svc.db.query('DELETE FROM receipts WHERE payment_attempt_id = :id', { replacements: { id } });
      await area.workers.find((w) => w.name === 'receipt-finalizer-worker')!.run({});
      const receipt = (await env.svc.db.query(
        'SELECT status, evidence, transaction_hash, version_id FROM receipts WHERE payment_attempt_id = :id',
        { replacements: { id }, plain: true },
      )) as Record<string, string>;
      expect(receipt).toMatchObject({
        status: 'settled',
        evidence: 'local_simulation',
        transaction_hash: settled.body.transactionHash,
        version_id: expect.stringMatching(/^ver_/),
      });
    },
  );
});

function networksOf(env: FacilitatorEnv) {
  // The same registry the service was built with: rebuilt from the local network, as testNetworks does.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { testNetworks } = require('../support/test-service') as typeof import('../support/test-service');
  return testNetworks({
    rpcUrl: env.network.rpcUrl,
    assets: env.network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
  });
}
