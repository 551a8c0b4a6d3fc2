/**
 * Hardening the stock x402 middleware got (issue #30), against the REAL marketplace, the local network and real
 * signatures: caching headers on paid and unpaid answers, encoded-slash and newline path tricks, and a facilitator
 * that does not answer in time (indeterminate, never a failure).
 */
import type { AddressInfo } from 'node:net';
import http, { type Server } from 'node:http';
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

const paymentWithin = (e: FacilitatorEnv, b: Keypair, to: string, amount: string, expiration?: number) =>
  paymentCase(e, b, to, amount, { sign: { expiration: expiration ?? e.network.latestLedger() + 30 } });
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GET with the path sent byte for byte (fetch's URL parser would resolve `%2E%2E` before sending). */
function rawGet(
  base: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, path, method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function listen(app: express.Express): Promise<{ url: string; server: Server }> {
  const server = await new Promise<Server>((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('paywall hardening: caching, path tricks, facilitator timeouts', () => {
  let network: LocalNetwork;
  let svc: TestService;
  let env: FacilitatorEnv;
  let api: { url: string; server: Server };
  const shops: Server[] = [];
  const stalled: Array<(e: Error) => void> = [];
  let buyer: Keypair;
  let payTo: string;
  let resourceId: string;
  let apiKey: string;
  let served = 0;

  beforeAll(async () => {
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 400, assets: [{ code: 'USDC' }] });
    svc = await startTestService({
      networks: testNetworks({
        rpcUrl: network.rpcUrl,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      facilitator: { channelAccounts: 2, pollMs: 25 },
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
    for (const reject of stalled) reject(new Error('test over'));
    for (const s of [...shops, api?.server]) {
      s?.closeAllConnections();
      await new Promise((r) => s?.close(r));
    }
    await svc?.stop();
    await network?.stop();
  });

  /** A shop with paid routes `/paid`, `/paid/:name` and a regex route `/files/.*` (no dotAll). */
  async function shop(
    fetchFn: typeof fetch = fetch,
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
    const wall = paywall({ client, resourceId, settle: { waitMs: 20_000, pollMs: 100 }, ...extra });
    const serve: express.RequestHandler =
      handler ??
      ((_req, res) => {
        served++;
        res.json({ secret: 'paid content' });
      });
    app.get('/paid', wall, serve);
    app.get('/paid/:name', wall, serve);
    app.get(/^\/files\/.*$/, wall, serve);
    const s = await listen(app);
    shops.push(s.server);
    return s.url;
  }

  /** fetch that never answers the given marketplace operation (the call hangs, as a stalled facilitator would). */
  const stalling = (pathname: string) =>
    (async (input: RequestInfo | URL, init?: RequestInit) => {
      const req = input instanceof Request ? input : new Request(input, init);
      if (req.method === 'POST' && new URL(req.url).pathname === pathname)
        return new Promise<Response>((_, reject) => stalled.push(reject));
      return fetch(req);
    }) as typeof fetch;

  const balance = () => Number(network.balance(buyer.publicKey(), 'USDC'));

  it('a 402 payment request carries Cache-Control: no-store', async () => {
    const res = await fetch(`${await shop()}/paid`);
    expect(res.status).toBe(402);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it("a paid 200 carries Cache-Control: private, keeping the handler's max-age but never public", async () => {
    const url = await shop(fetch, {}, (_req, res) => {
      res.set('Cache-Control', 'public, max-age=60, s-maxage=600').json({ secret: 'paid content' });
    });
    const c = await paymentWithin(env, buyer, payTo, '0.25');
    const res = await fetch(`${url}/paid`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('private, max-age=60');
  });

  it(
    'a failed settlement (authorization expired while the handler ' + 'ran) answers 402 with Cache-Control: no-store',
    async () => {
      const latest = network.latestLedger();
      const url = await shop(fetch, {}, async (_req, res) => {
        while (network.latestLedger() <= latest + 3) await sleep(100);
        res.json({ secret: 'paid content' });
      });
      const c = await paymentWithin(env, buyer, payTo, '0.25', latest + 3);
      const res = await fetch(`${url}/paid`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      expect(res.status).toBe(402);
      expect(res.headers.get('cache-control')).toBe('no-store');
    },
  );

  it.each([
    ['an encoded slash %2F', '/paid/public%2F..%2Fsecret'],
    ['an encoded slash %2f (lower case)', '/paid/a%2fb'],
    ['an encoded backslash %5C', '/paid/a%5Cb'],
    ['an encoded dot segment', '/paid/%2E%2E'],
    ['a newline %0A past a route regex without dotAll', '/files/x%0Ay'],
    ['a carriage return %0D', '/paid/x%0D'],
  ])(
    'path trick: %s is refused 400 before verifying, the handler does not run and nothing is charged',
    async (_name, path) => {
      served = 0;
      const url = await shop();
      const before = balance();
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const res = await rawGet(url, path, { 'PAYMENT-SIGNATURE': b64(c.payload) });
      expect(res.status).toBe(400);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['payment-required']).toBeUndefined();
      expect(JSON.parse(res.body).error).toMatchObject({ code: 'INVALID_REQUEST' });
      expect(served).toBe(0);
      await sleep(500);
      expect(balance()).toBe(before);
    },
  );

  it('a plain paid path with an encoded ordinary character (%20) is still served', async () => {
    const url = await shop();
    const c = await paymentWithin(env, buyer, payTo, '0.25');
    const res = await fetch(`${url}/paid/a%20b`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
    expect(res.status).toBe(200);
  });

  it(
    'a verify call that times out is indeterminate: 503 with Retry-After, "pending", no PAYMENT-REQUIRED, the ' +
      'handler does not run',
    async () => {
      served = 0;
      const url = await shop(stalling('/v1/verify'), {
        settle: { waitMs: 20_000, pollMs: 100, facilitatorTimeoutMs: 300 },
      });
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const res = await fetch(`${url}/paid`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('payment-required')).toBeNull();
      const body = await res.json();
      expect(body.error.code).toBe('SETTLEMENT_UNCONFIRMED');
      expect(body.error.message).toMatch(/pending, not failed/);
      expect(served).toBe(0);
    },
  );

  it(
    'a settle call that times out is indeterminate, never a failure: 503 with Retry-After, "pending", the ' +
      'content withheld',
    async () => {
      served = 0;
      const url = await shop(stalling('/v1/settle'), {
        settle: { waitMs: 20_000, pollMs: 100, facilitatorTimeoutMs: 500 },
      });
      const c = await paymentWithin(env, buyer, payTo, '0.25');
      const started = Date.now();
      const res = await fetch(`${url}/paid`, { headers: { 'PAYMENT-SIGNATURE': b64(c.payload) } });
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('payment-required')).toBeNull();
      expect(res.headers.get('payment-response')).toBeNull();
      const text = await res.text();
      expect(text).not.toContain('paid content');
      const body = JSON.parse(text);
      expect(body.error).toMatchObject({
        code: 'SETTLEMENT_UNCONFIRMED',
        details: [{ field: 'paymentAttemptId', message: expect.stringMatching(/^pay_/) }],
      });
      expect(body.error.message).toMatch(/pending, not failed/);
      expect(served).toBe(1);
    },
  );
});
