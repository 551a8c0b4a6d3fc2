/**
 * Fair capacity (issue #29 item 12, "Starving everyone's settlements"): one client with five free sellers fires 45
 * self-dealing dust settles; an honest seller's settle, from another client, must not wait behind them. Channels are
 * capped per seller, payer and client across processes (the lease table counts them), waiting places are bounded per
 * party, and a settle beyond its places is refused at once with 503, the bound named, and Retry-After.
 *
 * The service listens on 127.0.0.1 and each client binds its own loopback source address (the flood 127.0.0.1, the
 * honest seller's buyer 127.0.0.2), so the service sees two clients (req.ip). Ledgers close only when the test says:
 * while none closes, every channel given out stays pinned to its transaction, so who got a channel is plain to see.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { Keypair } from '@stellar/stellar-sdk';
import { createChannelLeaseRepository } from '../../src/data/channel-lease-repository';
import {
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  sleep,
  startFacilitatorEnv,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';

const FLOOD_CLIENT = '127.0.0.1';
const HONEST_CLIENT = '127.0.0.2';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: {
    ok?: boolean;
    status?: string;
    error?: { code: string; details?: Array<{ code?: string; message: string }> };
  };
  ms: number;
}

/** POST from a chosen loopback source address (what the service's req.ip reports). */
function postFrom(localAddress: string, base: string, path: string, body: unknown): Promise<Answer> {
  const t0 = performance.now();
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${path}`,
      {
        method: 'POST',
        localAddress,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
            ms: performance.now() - t0,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('fair capacity: channels and settle queue places are shared per seller, payer and client', () => {
  let env: FacilitatorEnv;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    // Four channels (the default pool): each seller, payer and client may hold two; four waiting places each.
    env = await startFacilitatorEnv({
      ledgerCloseMs: 0,
      facilitator: { channelAccounts: 4, pollMs: 20, confirmGraceMs: 5_000, channelAcquireTimeoutMs: 60_000 },
    });
    server = http.createServer(env.svc.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await env?.stop();
  });

  async function verified(payer: Keypair, payTo: string, amount: string): Promise<{ c: PaymentCase; id: string }> {
    const c = await paymentCase(env, payer, payTo, amount);
    const v = await request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
    if (v.status !== 200) throw new Error(`verify: ${v.status} ${JSON.stringify(v.body)}`);
    return { c, id: v.body.paymentAttemptId };
  }
  const attemptStatus = async (id: string) =>
    (
      (await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id },
        plain: true,
        type: 'SELECT',
      })) as { status: string }
    ).status;
  const heldBy = async () =>
    (await env.svc.db.query(
      `SELECT client, count(*)::int AS n FROM channel_leases WHERE transaction_hash IS NOT NULL OR (holder IS ` +
        `NOT NULL AND leased_until >= now()) GROUP BY client ORDER BY client`,
      {
        type: 'SELECT',
      },
    )) as Array<{ client: string; n: number }>;

  it(
    "when one client floods settles from five sellers, an honest seller's settle still gets a channel without " +
      'waiting behind the flood, and the flood beyond its queue places gets 503 with Retry-After at once',
    async () => {
      // The flood: five free sellers whose wallets pay one another dust (self-dealing), 45 payments verified first.
      const flooders = await Promise.all(Array.from({ length: 5 }, () => sellerWithResource(env, '0.0001')));
      await Promise.all(flooders.map((f) => env.network.faucet(f.seller.wallet.publicKey(), 'USDC', '1')));
      const flood: Array<{ c: PaymentCase; id: string; resourceId: string }> = [];
      for (let i = 0; i < 45; i++) {
        const payer = flooders[i % 5].seller.wallet;
        const payee = flooders[(i + 1) % 5];
        flood.push({
          ...(await verified(payer, payee.seller.wallet.publicKey(), '0.0001')),
          resourceId: payee.resource.id,
        });
      }
      // The honest seller and its real buyer.
      const honest = await sellerWithResource(env, '0.25');
      const buyer = await fundedBuyer(env, '1');
      const sale = await verified(buyer, honest.seller.wallet.publicKey(), '0.25');
      // the set-up's ledger entries are in; from here no ledger closes until the test says
      await env.network.closeLedger();
      const ledgerBefore = env.network.latestLedger();

      const started = performance.now();
      const floodAnswers = flood.map((f) =>
        postFrom(FLOOD_CLIENT, base, '/v1/settle', {
          paymentAttemptId: f.id,
          paymentPayload: f.c.payload,
          resourceId: f.resourceId,
        }),
      );
      // The flood takes what it may (two channels: its client's cap), fills its client's four waiting places, and the
      // rest is refused at once: every refusal arrives while no ledger has closed (nothing could have freed a channel).
      const settledOrWaiting: Answer[] = [];
      const quick: Answer[] = [];
      for (const p of floodAnswers) void p.then((a) => (a.status === 503 ? quick : settledOrWaiting).push(a));
      for (let i = 0; i < 500 && quick.length < 45 - 2 - 4; i++) await sleep(20);
      await sleep(500); // anything else that would answer without a ledger closing has answered by now
      expect(env.network.latestLedger()).toBe(ledgerBefore);
      expect(quick.length).toBe(45 - 2 - 4);
      for (const a of quick) {
        expect(a.body.error?.code).toBe('SERVICE_UNAVAILABLE');
        expect(a.body.error?.details).toEqual([expect.objectContaining({ code: 'settle_queue_per_client' })]);
        expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      expect(settledOrWaiting).toEqual([]); // the others still hold or wait: no ledger closed
      expect(await heldBy()).toEqual([{ client: expect.stringContaining(FLOOD_CLIENT), n: 2 }]);

      // The honest seller's buyer settles from another client: it gets one of the two free channels at once (its
      // transaction is submitted: the attempt is claimed) although the flood's settles were waiting before it.
      const honestAnswer = postFrom(HONEST_CLIENT, base, '/v1/settle', {
        paymentAttemptId: sale.id,
        paymentPayload: sale.c.payload,
        resourceId: honest.resource.id,
      });
      for (let i = 0; i < 150 && (await attemptStatus(sale.id)) === 'verified'; i++) await sleep(20);
      expect(await attemptStatus(sale.id)).toBe('settlement_pending');
      expect(env.network.latestLedger()).toBe(ledgerBefore);
      const held = await heldBy();
      expect(held).toHaveLength(2);
      expect(held.find((h) => h.client.includes(HONEST_CLIENT))?.n).toBe(1);
      expect(held.find((h) => h.client.includes(FLOOD_CLIENT))?.n).toBe(2);

      // Ledgers close: the honest sale lands, and so do the flood's held and waiting settles (in turn).
      const closer = setInterval(() => void env.network.closeLedger(), 100);
      try {
        const a = await honestAnswer;
        expect(a.status).toBe(200);
        expect(a.body).toMatchObject({ ok: true, status: 'settled' });
        await Promise.all(floodAnswers);
      } finally {
        clearInterval(closer);
      }
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('0.75');
      expect(performance.now() - started).toBeLessThan(60_000);
    },
  );

  it(
    'a party beyond its queue places gets 503 with Retry-After at once; duplicates of one payment share its ' +
      'place and end REPLAY_DETECTED',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.1');
      const payTo = seller.wallet.publicKey();
      const payer = await fundedBuyer(env, '5');
      // One payer: one channel (its cap: one transfer in flight per payer), four waiting places; the sixth payment is
      // beyond them.
      const payments = [];
      for (let i = 0; i < 6; i++) payments.push(await verified(payer, payTo, '0.1'));
      await env.network.closeLedger();
      const ledgerBefore = env.network.latestLedger();
      const settle = (p: { c: PaymentCase; id: string }) =>
        postFrom(HONEST_CLIENT, base, '/v1/settle', {
          paymentAttemptId: p.id,
          paymentPayload: p.c.payload,
          resourceId: resource.id,
        });
      const first = payments.slice(0, 5).map(settle);
      // Wait until one is claimed and four wait (nothing more can move while no ledger closes).
      for (let i = 0; i < 250; i++) {
        const claimed = (await Promise.all(payments.slice(0, 5).map((p) => attemptStatus(p.id)))).filter(
          (s) => s === 'settlement_pending',
        ).length;
        if (claimed === 1) break;
        await sleep(20);
      }
      await sleep(300);
      // A duplicate of a waiting payment takes no new place: it waits with it.
      const duplicate = settle(payments[4]);
      const t0 = performance.now();
      const beyond = await settle(payments[5]);
      expect(performance.now() - t0).toBeLessThan(5_000);
      expect(env.network.latestLedger()).toBe(ledgerBefore);
      expect(beyond.status).toBe(503);
      expect(beyond.body.error?.code).toBe('SERVICE_UNAVAILABLE');
      expect(beyond.body.error?.details?.[0].code).toMatch(/^settle_queue_per_(payer|seller|client)$/);
      expect(Number(beyond.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // the payment was not used: the same settle may retry
      expect(await attemptStatus(payments[5].id)).toBe('verified');

      const closer = setInterval(() => void env.network.closeLedger(), 100);
      try {
        const answers = await Promise.all([...first, duplicate]);
        expect(answers.slice(0, 4).map((a) => a.body.status)).toEqual(Array(4).fill('settled'));
        // One of the payment and its duplicate settles, the other is a replay.
        expect([answers[4], answers[5]].map((a) => a.body.status ?? a.body.error?.code).sort()).toEqual([
          'REPLAY_DETECTED',
          'settled',
        ]);
        // Retried after Retry-After, the refused payment settles.
        const retried = await settle(payments[5]);
        expect(retried.body).toMatchObject({ ok: true, status: 'settled' });
      } finally {
        clearInterval(closer);
      }
    },
  );

  it(
    'across processes, no client holds more channels than its cap: concurrent takes for one party are counted ' +
      "under the lease table's locks",
    async () => {
      const network = 'stellar:fair-capacity-test';
      const addresses = Array.from({ length: 8 }, (_, i) => `GFAIRCAPACITYTEST${i}`);
      // Two repositories, concurrent statements on separate connections: what two service processes do.
      const repos = [createChannelLeaseRepository(env.svc.db), createChannelLeaseRepository(env.svc.db)];
      await repos[0].register(network, addresses);
      const claim = {
        party: { sellerId: 'sel_one', payer: 'GPAYER', client: '203.0.113.9' },
        caps: { seller: 8, payer: 8, client: 3 },
      };
      const takes = await Promise.all(
        Array.from({ length: 20 }, (_, i) => repos[i % 2].takeFor(network, addresses, `token-${i}`, 30, claim)),
      );
      const taken = takes.filter((t) => t.address !== null);
      expect(taken).toHaveLength(3);
      expect(takes.filter((t) => t.address === null).every((t) => 'full' in t && t.full === 'client')).toBe(true);
      // Another client still gets a channel.
      const other = await repos[0].takeFor(network, addresses, 'token-other', 30, {
        ...claim,
        party: { ...claim.party, client: '198.51.100.7' },
      });
      expect(other.address).not.toBeNull();
    },
  );
});
