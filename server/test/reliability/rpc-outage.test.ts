// RPC outage during settle. The service reaches the local network's Soroban RPC through a TCP proxy the test can take
// down (connections reset) or turn into a black hole (connections accepted, never answered). Nothing of ours is
// mocked: the service speaks HTTP to the proxy as to any RPC, and the ledger is the real local network.
//
// Guarantees checked:
// - RPC down before settle: settle answers 502/503 in the envelope (bounded: never hangs), no money moves, the
//   attempt stays settleable, and the same payment settles once the RPC is back;
// - RPC gone right after the transaction was submitted: settle answers 202 settlement_pending (never a failure: the
//   transaction may have landed), and once the RPC is back the settlement ends settled with the money moved once;
// - RPC hanging before settle: settle still answers within the client's bound, with 502/503.
import http from 'node:http';
import request from 'supertest';
import type { Keypair } from '@stellar/stellar-sdk';
import { startLocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks } from '../support/test-service';
import {
  facilitatorWorker,
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  sleep,
  type FacilitatorEnv,
} from '../facilitator/helpers';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy';

const CLIENT_BOUND_MS = 20_000;

interface Answer {
  status: number | 'timeout';
  body: {
    ok?: boolean;
    status?: string;
    transactionHash?: string;
    receiptId?: string;
    error?: { code?: string; message?: string; requestId?: string };
  };
}

describe('RPC outage during settle', () => {
  let env: FacilitatorEnv;
  let proxy: TcpProxy;
  let base: string;
  let server: http.Server;
  let buyer: Keypair;
  let onSubmitted: (() => void) | null = null;

  beforeAll(async () => {
    const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
    proxy = await startTcpProxy(network.rpcUrl);
    const svc = await startTestService({
      networks: testNetworks({
        rpcUrl: proxy.url,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      facilitator: {
        channelAccounts: 2,
        pollMs: 25,
        confirmGraceMs: 1_500,
        // 100 ms ledgers; a short time bound so an RPC outage after submission answers 202 within the client bound
        ledgerSeconds: 0.1,
        txTimeoutSeconds: 5,
        confirmationWorkerAgeSeconds: 1,
        afterSubmit: () => {
          const hook = onSubmitted;
          onSubmitted = null;
          hook?.();
        },
      },
    });
    env = {
      network,
      svc,
      usdc: network.assets.find((a) => a.code === 'USDC')!,
      async stop() {
        await svc.stop();
        await network.stop();
      },
    };
    server = await new Promise<http.Server>((resolve) => {
      const s = svc.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
    buyer = await fundedBuyer(env, '100');
  }, 120_000);

  afterAll(async () => {
    proxy?.set('up');
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await env?.stop();
    await proxy?.close();
  });

  async function settle(body: unknown): Promise<Answer> {
    try {
      const res = await fetch(`${base}/v1/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(CLIENT_BOUND_MS),
      });
      return { status: res.status, body: (await res.json()) as Answer['body'] };
    } catch {
      return { status: 'timeout', body: {} };
    }
  }

  async function verifiedPayment() {
    const { seller, resource } = await sellerWithResource(env, '0.25');
    const payTo = seller.wallet.publicKey();
    const c = await paymentCase(env, buyer, payTo, '0.25', { sign: { expiration: env.network.latestLedger() + 900 } });
    const v = await request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
    expect(v.status).toBe(200);
    return {
      payTo,
      body: { paymentAttemptId: v.body.paymentAttemptId as string, paymentPayload: c.payload, resourceId: resource.id },
    };
  }

  const attemptStatus = async (id: string) =>
    (
      (await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id },
        plain: true,
      })) as { status: string }
    ).status;
  const settlementRows = async (id: string) =>
    (
      await env.svc.db.query('SELECT status, transaction_hash FROM settlements WHERE payment_attempt_id = :id', {
        replacements: { id },
      })
    )[0] as Array<{ status: string; transaction_hash: string }>;

  const isUnavailable = (a: Answer) =>
    (a.status === 502 || a.status === 503) &&
    a.body.ok === false &&
    typeof a.body.error?.requestId === 'string' &&
    ['SERVICE_UNAVAILABLE', 'SETTLEMENT_FAILED'].includes(a.body.error?.code ?? '');

  it(
    'RPC down before settle: 502/503 in the envelope, no money moved, and the same payment settles once the RPC ' +
      'is back',
    async () => {
      const p = await verifiedPayment();
      const buyerBefore = env.network.balance(buyer.publicKey(), 'USDC');
      proxy.set('refuse');
      const refused = await settle(p.body);
      const statusWhileDown = await attemptStatus(p.body.paymentAttemptId);
      const buyerWhileDown = env.network.balance(buyer.publicKey(), 'USDC');
      proxy.set('up');
      const retried = await settle(p.body);

      expect({
        status: refused.status,
        ok: refused.body.ok,
        code: refused.body.error?.code,
        unavailable: isUnavailable(refused),
      }).toMatchObject({ unavailable: true });
      expect(buyerWhileDown).toBe(buyerBefore);
      expect(statusWhileDown).toBe('verified'); // still settleable: nothing was submitted
      expect(retried.status).toBe(200);
      expect(retried.body.status).toBe('settled');
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe((Number(buyerBefore) - 0.25).toString());
      expect(await settlementRows(p.body.paymentAttemptId)).toHaveLength(1);
    },
    120_000,
  );

  it(
    'RPC gone right after submission: 202 settlement_pending, then ' + 'settled once the RPC is back, money moved once',
    async () => {
      const p = await verifiedPayment();
      const buyerBefore = env.network.balance(buyer.publicKey(), 'USDC');
      const sellerBefore = env.network.balance(p.payTo, 'USDC');
      onSubmitted = () => proxy.set('refuse');
      const pending = await settle(p.body);
      const rowsWhileDown = await settlementRows(p.body.paymentAttemptId);
      await sleep(500); // the outage lasts a while
      proxy.set('up');
      // Bounded wait for the settlement to become final (the confirmation worker asks the ledger once the RPC is back).
      const worker = facilitatorWorker(env, 'settlement-confirmation-worker');
      let rows = await settlementRows(p.body.paymentAttemptId);
      for (let i = 0; i < 300 && rows[0]?.status === 'pending'; i++) {
        await sleep(100);
        await worker.run({ olderThanSeconds: 0 });
        rows = await settlementRows(p.body.paymentAttemptId);
      }

      expect(pending.status).toBe(202);
      expect(pending.body.status).toBe('settlement_pending');
      expect(rowsWhileDown.map((r) => r.status)).toEqual(['pending']);
      expect(rows.map((r) => r.status)).toEqual(['settled']);
      expect(rows[0].transaction_hash).toBe(pending.body.transactionHash);
      expect(await attemptStatus(p.body.paymentAttemptId)).toBe('settled');
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe((Number(buyerBefore) - 0.25).toString());
      expect(env.network.balance(p.payTo, 'USDC')).toBe((Number(sellerBefore) + 0.25).toFixed(7));
      const receipt = await request(env.svc.app).get(`/v1/receipts/${pending.body.receiptId}`);
      expect(receipt.status).toBe(200);
      expect(receipt.body.status ?? receipt.body.receipt?.status).toBe('settled');
    },
    120_000,
  );

  it(
    'RPC hanging before settle: settle still answers within the ' + 'client bound, with 502/503 in the envelope',
    async () => {
      const p = await verifiedPayment();
      proxy.set('blackhole');
      const answer = await settle(p.body);
      proxy.set('up');
      expect({
        status: answer.status,
        code: answer.body.error?.code,
        unavailable: isUnavailable(answer),
      }).toMatchObject({
        unavailable: true,
      });
      expect(await attemptStatus(p.body.paymentAttemptId)).toBe('verified');
      const retried = await settle(p.body);
      expect(retried.status).toBe(200);
    },
    120_000,
  );
});
