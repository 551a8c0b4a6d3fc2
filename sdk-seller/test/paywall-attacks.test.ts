/**
 * The paywall never lies (issue #20 items 3, 4): a cut connection to the marketplace, a "still in progress" retry,
 * a pending settlement and a definite failure, against the REAL marketplace (with its confirmation worker), the
 * local network and real signatures. The buyer is plain fetch with payloads signed by the server's test helpers.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Keypair } from '@stellar/stellar-sdk';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, type TestService } from '../../server/test/support/test-service';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  type FacilitatorEnv,
} from '../../server/test/facilitator/helpers';
import { createSellerClient, paywall, type PaywallOptions } from '../src';

/** paymentCase with an expiry inside the facilitator's window (maxTimeoutSeconds / ledger seconds + 2) unless set. */
const paymentWithin = (
  e: FacilitatorEnv,
  ...rest: Parameters<typeof paymentCase> extends [unknown, ...infer R] ? R : never
) => {
  const [b, to, amount, o = {}] = rest;
  return paymentCase(e, b, to, amount, { ...o, sign: { expiration: e.network.latestLedger() + 30, ...o.sign } });
};

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const unb64 = (v: string | null) => JSON.parse(Buffer.from(v as string, 'base64').toString('utf8'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A JSON-RPC front of the local network whose getTransaction can be held back (answered 503) on demand. */
async function rpcFront(target: string): Promise<{ url: string; holdGetTransaction: boolean; close(): Promise<void> }> {
  const front: { url: string; holdGetTransaction: boolean; close(): Promise<void> } = {
    url: '',
    holdGetTransaction: false,
    close: async () => undefined,
  };
  const app = express();
  app.use(express.text({ type: '*/*', limit: '5mb' }));
  const base = new URL(target);
  app.all('*path', async (req, res) => {
    const body = req.method === 'POST' ? String(req.body ?? '') : undefined;
    if (front.holdGetTransaction && body && /"method"\s*:\s*"getTransaction"/.test(body)) return res.status(503).end();
    const up = await fetch(new URL(req.originalUrl, base), {
      method: req.method,
      headers: { 'content-type': 'application/json' },
      body,
    });
    res
      .status(up.status)
      .type(up.headers.get('content-type') ?? 'application/json')
      .send(await up.text());
  });
  const h = await listen(app);
  front.url = `${h.url}${base.pathname}`;
  front.close = () =>
    new Promise<void>((r) => {
      h.server.closeAllConnections();
      h.server.close(() => r());
    });
  return front;
}

async function listen(app: express.Express): Promise<{ url: string; server: Server }> {
  const server = await new Promise<Server>((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('paywall: content leaves only on a confirmed settlement', () => {
  let network: LocalNetwork;
  let svc: TestService;
  let env: FacilitatorEnv;
  let api: { url: string; server: Server };
  const shops: Server[] = [];
  let buyer: Keypair;
  let payTo: string;
  let resourceId: string;
  let apiKey: string;
  let served = 0;
  let rpc: { url: string; holdGetTransaction: boolean; close(): Promise<void> };

  beforeAll(async () => {
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 400, assets: [{ code: 'USDC' }] });
    rpc = await rpcFront(network.rpcUrl);
    // The service reaches the ledger through the front: holding back getTransaction is an RPC that cannot tell a
    // transaction's fate, so settle answers 202 settlement_pending after the time bound and grace; the
    // confirmation worker finishes it once the RPC answers again.
    svc = await startTestService({
      networks: testNetworks({
        rpcUrl: rpc.url,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      facilitator: {
        channelAccounts: 2,
        pollMs: 25,
        txTimeoutSeconds: 2,
        confirmGraceMs: 200,
        confirmationWorkerAgeSeconds: 0,
      },
      runJobs: true,
      jobPollMs: 100,
    });
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    env = { network, svc, usdc, stop: async () => undefined };
    api = await listen(svc.app as unknown as express.Express);
    const { seller, resource } = await sellerWithResource(env, '0.25');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
    apiKey = seller.apiKey;
    buyer = await fundedBuyer(env, '10');
  });
  afterAll(async () => {
    for (const s of [...shops, api?.server]) {
      s?.closeAllConnections();
      await new Promise((r) => s?.close(r));
    }
    await svc?.stop();
    await rpc?.close();
    await network?.stop();
  });

  async function shop(
    fetchFn: typeof fetch,
    extra: Partial<PaywallOptions> = {},
    handler?: express.RequestHandler,
  ): Promise<string> {
    const client = createSellerClient({
      baseUrl: api.url,
      apiKey,
      fetch: fetchFn,
      retry: { baseDelayMs: 1, maxRetries: 2 },
    });
    const app = express();
    app.get(
      '/paid',
      paywall({ client, resourceId, settle: { waitMs: 20_000, pollMs: 100 }, ...extra }),
      handler ??
        ((_req, res) => {
          served++;
          res.json({ secret: 'paid content' });
        }),
    );
    const s = await listen(app);
    shops.push(s.server);
    return `${s.url}/paid`;
  }

  const balance = () => Number(network.balance(buyer.publicKey(), 'USDC'));

  it(
    'when the settle connection drops and the retry hears 409 "still in progress", the paywall asks for the ' +
      'outcome and delivers once settled (not a 402)',
    async () => {
      const settleStatuses: number[] = [];
      let cut = false;
      const cutting = (async (input: RequestInfo | URL, init?: RequestInit) => {
        const req = input instanceof Request ? input : new Request(input, init);
        if (req.method === 'POST' && new URL(req.url).pathname === '/v1/settle') {
          if (!cut) {
            cut = true;
            void fetch(req.clone()).catch(() => undefined); // reaches the marketplace ...
            await sleep(50);
            // ... the answer never comes back
            throw new TypeError('fetch failed: ECONNRESET (connection cut by the test)');
          }
          const res = await fetch(req);
          settleStatuses.push(res.status);
          return res;
        }
        return fetch(req);
      }) as typeof fetch;
      const url = await shop(cutting);
      const before = balance();
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      expect(settleStatuses[0]).toBe(409);
      expect({ status: res.status, body: res.status === 200 ? null : await res.clone().text() }).toEqual({
        status: 200,
        body: null,
      });
      expect(await res.json()).toEqual({ secret: 'paid content' });
      expect(unb64(res.headers.get('payment-response'))).toMatchObject({
        success: true,
        status: 'settled',
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        payer: buyer.publicKey(),
      });
      expect(before - balance()).toBeCloseTo(0.25, 7);
    },
  );

  it(
    'when settle answers 202 pending, the content waits for the confirmation; PAYMENT-RESPONSE never says ' +
      'success while pending',
    async () => {
      const settleStatuses: number[] = [];
      const recording = (async (input: RequestInfo | URL, init?: RequestInit) => {
        const req = input instanceof Request ? input : new Request(input, init);
        const res = await fetch(req);
        if (req.method === 'POST' && new URL(req.url).pathname === '/v1/settle') settleStatuses.push(res.status);
        return res;
      }) as typeof fetch;
      const url = await shop(recording);
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      rpc.holdGetTransaction = true;
      const pending = fetch(url, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      for (let i = 0; i < 200 && !settleStatuses.includes(202); i++) await sleep(50);
      expect(settleStatuses).toEqual([202]);
      rpc.holdGetTransaction = false;
      const res = await pending;
      expect({ status: res.status, body: res.status === 200 ? null : await res.clone().text() }).toEqual({
        status: 200,
        body: null,
      });
      const pr = unb64(res.headers.get('payment-response'));
      expect(pr).toMatchObject({ success: true, status: 'settled' });
      const receipt = await request(`/v1/receipts/${pr.receiptId}`);
      expect(receipt).toMatchObject({ status: 'settled', transactionHash: pr.transactionHash });
    },
  );

  it(
    'when the confirmation does not come within the wait, the content is withheld: 503 SETTLEMENT_UNCONFIRMED ' +
      'with the payment id, no 402',
    async () => {
      served = 0;
      const url = await shop(fetch, { settle: { waitMs: 300, pollMs: 50 } });
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      rpc.holdGetTransaction = true;
      let res: Response;
      try {
        res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      } finally {
        rpc.holdGetTransaction = false;
      }
      expect(res.status).toBe(503);
      expect(res.headers.get('payment-required')).toBeNull();
      expect(res.headers.get('payment-response')).toBeNull();
      const body = await res.json();
      expect(body.error).toMatchObject({
        code: 'SETTLEMENT_UNCONFIRMED',
        details: [{ field: 'paymentAttemptId', message: expect.stringMatching(/^pay_/) }],
      });
      expect(JSON.stringify(body)).not.toContain('paid content');
      expect(served).toBe(1);
      // Why not a 402: the payment goes on and settles; asking the buyer to pay again would charge it twice.
      const paymentId = body.error.details[0].message as string;
      const seller = createSellerClient({ baseUrl: api.url, apiKey });
      for (let i = 0; i < 200 && (await seller.payments.get(paymentId)).status !== 'settled'; i++) await sleep(100);
      expect((await seller.payments.get(paymentId)).status).toBe('settled');
    },
  );

  it(
    'when the settlement definitely fails (the authorization expired while the handler ran), 402 with the reason ' +
      'and no content',
    async () => {
      const latest = network.latestLedger();
      const url = await shop(fetch, {}, async (_req, res) => {
        while (network.latestLedger() <= latest + 3) await sleep(100);
        res.json({ secret: 'paid content' });
      });
      const c = await paymentWithin(env, buyer, payTo, '0.25', { sign: { expiration: latest + 3 } });
      const before = balance();
      const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      expect(res.status).toBe(402);
      const body = await res.json();
      expect(body.error).toMatchObject({ code: 'AUTH_EXPIRED' });
      expect(JSON.stringify(body)).not.toContain('paid content');
      expect(unb64(res.headers.get('payment-required'))).toMatchObject({ error: { code: 'AUTH_EXPIRED' } });
      expect(balance()).toBe(before);
    },
  );

  async function request(path: string): Promise<Record<string, unknown>> {
    const res = await fetch(`${api.url}${path}`);
    return (await res.json()) as Record<string, unknown>;
  }
});
