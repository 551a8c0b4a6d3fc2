/**
 * Money-safety guarantees of the facilitator (issue #9, facilitator part), each test named after the attack it
 * stops. Real service, real PostgreSQL, the local Stellar network in-process, real HTTP.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { bearer, resourceInput, signUpSeller } from '../support/fixtures';
import {
  facilitatorWorker,
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  sleep,
  startFacilitatorEnv,
  type FacilitatorEnv,
  type PaymentCase,
} from '../facilitator/helpers';

async function metricValue(
  registry: { getSingleMetricAsString(name: string): Promise<string> },
  name: string,
  label: string,
): Promise<number> {
  const text = await registry.getSingleMetricAsString(name);
  return text
    .split('\n')
    .filter((l) => l.startsWith(name) && l.includes(label))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

describe('facilitator payment safety', () => {
  let env: FacilitatorEnv;
  let payTo: string;
  let resourceId: string;
  let hold: Promise<void> | null = null;
  let failAfterClaim = false;
  let closer: NodeJS.Timeout | null = null;

  beforeAll(async () => {
    env = await startFacilitatorEnv({
      ledgerCloseMs: 0,
      facilitator: {
        channelAccounts: 2,
        confirmGraceMs: 3_000,
        pollMs: 20,
        afterClaim: async () => {
          if (failAfterClaim) throw new Error('simulated RPC outage right after the claim');
          if (hold) await hold;
        },
      },
    });
    const { seller, resource } = await sellerWithResource(env, '0.5');
    payTo = seller.wallet.publicKey();
    resourceId = resource.id;
    closer = setInterval(() => void env.network.closeLedger(), 40);
  });
  afterAll(async () => {
    if (closer) clearInterval(closer);
    await env.stop();
  });

  const app = () => env.svc.app;
  const verify = (c: PaymentCase, extra: Record<string, unknown> = {}) =>
    request(app())
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, ...extra });
  const settle = (id: string, c: PaymentCase, rid = resourceId) =>
    request(app()).post('/v1/settle').send({ paymentAttemptId: id, paymentPayload: c.payload, resourceId: rid });
  const row = async (sql: string, replacements: Record<string, unknown>) =>
    (await env.svc.db.query(sql, { replacements, plain: true })) as Record<string, unknown> | null;
  const count = async (sql: string, replacements: Record<string, unknown>) => Number((await row(sql, replacements))?.n);
  const sends = () => metricValue(env.svc.metrics.registry, 'ledger_rpc_requests_total', 'method="sendTransaction"');

  describe('one signed payment buys one delivery', () => {
    it(
      'when 50 requests verify one authorization in parallel, one ' + 'attempt is verified and 49 get REPLAY_DETECTED',
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, payTo, '0.5');
        const answers = await Promise.all(Array.from({ length: 50 }, () => verify(c)));
        expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
        const refused = answers.filter((a) => a.status !== 200);
        expect(refused).toHaveLength(49);
        expect(refused.every((a) => a.status === 409 && a.body.error.code === 'REPLAY_DETECTED')).toBe(true);
        expect(
          await count(`SELECT count(*) AS n FROM payment_attempts WHERE payer = :p AND status = 'verified'`, {
            p: buyer.publicKey(),
          }),
        ).toBe(1);
      },
    );

    it(
      'when a verified payment is verified again later, it is refused with REPLAY_DETECTED (409) naming the ' +
        'first attempt',
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, payTo, '0.5');
        const first = await verify(c);
        expect(first.status).toBe(200);
        const second = await verify(c);
        expect(second.status).toBe(409);
        expect(second.body.error).toMatchObject({
          code: 'REPLAY_DETECTED',
          details: [{ field: 'paymentAttemptId', message: first.body.paymentAttemptId }],
        });
      },
    );

    it(
      'when a settle is retried with the same Idempotency-Key, the first answer is replayed and the money moves ' +
        'once; without the key it is REPLAY_DETECTED',
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, payTo, '0.5');
        const v = await verify(c);
        const body = { paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId };
        const first = await request(app())
          .post('/v1/settle')
          .set('Idempotency-Key', `settle-${v.body.paymentAttemptId}`)
          .send(body);
        expect(first.status).toBe(200);
        const retry = await request(app())
          .post('/v1/settle')
          .set('Idempotency-Key', `settle-${v.body.paymentAttemptId}`)
          .send(body);
        expect(retry.status).toBe(200);
        expect(retry.headers['idempotent-replayed']).toBe('true');
        expect(retry.body).toEqual(first.body);
        const other = await request(app()).post('/v1/settle').send(body);
        expect(other.status).toBe(409);
        expect(other.body.error.code).toBe('REPLAY_DETECTED');
        expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('0.5');
        expect(
          await count('SELECT count(*) AS n FROM settlements WHERE payment_attempt_id = :id', {
            id: v.body.paymentAttemptId,
          }),
        ).toBe(1);
      },
    );
  });

  describe('verify-by-URL cannot be turned into a ReDoS', () => {
    const attackUrl = (domain: string) => `https://${domain}/x/${'{p}'.repeat(12)}`;

    it(
      'a resource URL with adjacent placeholders, or placeholders in the query or host, is refused at ' +
        'registration with ROUTE_TEMPLATE_INVALID',
      async () => {
        const seller = await signUpSeller(app());
        for (const url of [
          attackUrl(seller.domain),
          `https://${seller.domain}/v1/forecast/{city}?q={a}{b}`,
          `https://${seller.domain}/v1/forecast/x{city}`,
        ]) {
          const res = await request(app())
            .post('/v1/resources')
            .set(bearer(seller.apiKey))
            .send(resourceInput(seller, { url }));
          expect(res.status).toBe(400);
          expect(res.body.error.code).toBe('ROUTE_TEMPLATE_INVALID');
        }
      },
    );

    it(
      'when a stored resource URL holds twelve adjacent placeholders, verify with a 40-character URL answers ' +
        'normally (verified, no resource link)',
      async () => {
        const { seller, resource } = await sellerWithResource(env, '0.5');
        // A row from before the rule existed: written straight to the database.
        await env.svc.db.query('UPDATE resources SET url = :url WHERE id = :id', {
          replacements: { url: attackUrl(seller.domain), id: resource.id },
        });
        const buyer = await fundedBuyer(env, '1');
        const probe = `https://${seller.domain}/x/${'a'.repeat(40)}`;
        const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5', {
          requirements: { resource: probe },
        });
        const res = await verify(c);
        expect(res.status).toBe(200);
        expect(res.body.status).toBe('verified');
        expect(
          await row('SELECT resource_id FROM payment_attempts WHERE id = :id', { id: res.body.paymentAttemptId }),
        ).toEqual({ resource_id: null });
      },
    );

    it('verify by a concrete URL of a resource template links that resource', async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '1');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5', {
        requirements: { resource: `https://${seller.domain}/v1/forecast/paris?units=metric` },
      });
      const res = await verify(c);
      expect(res.status).toBe(200);
      expect(
        await row('SELECT resource_id, seller_id FROM payment_attempts WHERE id = :id', {
          id: res.body.paymentAttemptId,
        }),
      ).toEqual({ resource_id: resource.id, seller_id: seller.id });
    });
  });

  describe('no attempt is left stuck', () => {
    it(
      'when the settling process stops right after the claim, the cleanup worker fails the claim and the ' +
        'process, resuming, submits nothing',
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, payTo, '0.5');
        const v = await verify(c);
        let resume!: () => void;
        hold = new Promise<void>((r) => (resume = r));
        const sendsBefore = await sends();
        const pending = settle(v.body.paymentAttemptId, c).then((r) => r);
        for (let i = 0; i < 200; i++) {
          const a = await row('SELECT status FROM payment_attempts WHERE id = :id', { id: v.body.paymentAttemptId });
          if (a?.status === 'settlement_pending') break;
          await sleep(10);
        }
        await facilitatorWorker(env, 'stale-payment-cleanup-worker').run({ abandonedClaimSeconds: 0 });
        expect(
          await row('SELECT status, failure_code FROM payment_attempts WHERE id = :id', {
            id: v.body.paymentAttemptId,
          }),
        ).toEqual({ status: 'settlement_failed', failure_code: 'SETTLEMENT_FAILED' });
        hold = null;
        resume();
        const res = await pending;
        expect(res.status).toBe(502);
        expect(res.body.error.code).toBe('SETTLEMENT_FAILED');
        expect(
          await count('SELECT count(*) AS n FROM settlements WHERE payment_attempt_id = :id', {
            id: v.body.paymentAttemptId,
          }),
        ).toBe(0);
        expect(await sends()).toBe(sendsBefore);
        expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('1');
      },
    );

    it(
      'when settle fails between the claim and the pending settlement (RPC down), the attempt ends ' +
        'settlement_failed, never stuck in settlement_pending',
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, payTo, '0.5');
        const v = await verify(c);
        failAfterClaim = true;
        const res = await settle(v.body.paymentAttemptId, c);
        failAfterClaim = false;
        expect(res.status).toBe(500);
        expect(
          await row('SELECT status FROM payment_attempts WHERE id = :id', { id: v.body.paymentAttemptId }),
        ).toEqual({
          status: 'settlement_failed',
        });
        expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('1');
      },
    );
  });

  describe('receipts are tied to the resource terms', () => {
    it(
      'when a dust authorization (below the minimum) is verified or settled against a $0.5 resource, it is ' +
        'refused and no receipt exists',
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const dust = await paymentCase(env, buyer, payTo, '0.0000001');
        const v = await verify(dust);
        expect(v.status).toBe(422);
        expect(v.body.error.code).toBe('AMOUNT_BELOW_MINIMUM');
        const small = await paymentCase(env, buyer, payTo, '0.001');
        const vs = await verify(small);
        expect(vs.status).toBe(200);
        const res = await settle(vs.body.paymentAttemptId, small);
        expect(res.status).toBe(422);
        expect(res.body.error.code).toBe('AMOUNT_MISMATCH');
        expect(
          await count('SELECT count(*) AS n FROM receipts WHERE payment_attempt_id = :id', {
            id: vs.body.paymentAttemptId,
          }),
        ).toBe(0);
        expect(
          await row('SELECT status FROM payment_attempts WHERE id = :id', { id: vs.body.paymentAttemptId }),
        ).toEqual({ status: 'verified' });
      },
    );

    it(
      'a payment verified before a price rise is refused at settle with AMOUNT_MISMATCH (settle checks the ' +
        'current version); one at the current price settles and its receipt (also when restored by the finalizer) ' +
        'pins that version',
      async () => {
        const { seller, resource } = await sellerWithResource(env, '0.5');
        const buyer = await fundedBuyer(env, '10');
        const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
        const v = await verify(c, { resourceId: resource.id });
        expect(v.status).toBe(200);
        const patched = await request(app())
          .patch(`/v1/resources/${resource.id}`)
          .set(bearer(seller.apiKey))
          .send({ amount: '5' });
        expect(patched.status).toBe(200);
        expect(patched.body.versionId).not.toBe(resource.versionId);
        const refused = await settle(v.body.paymentAttemptId, c, resource.id);
        expect(refused.status).toBe(422);
        expect(refused.body.error.code).toBe('AMOUNT_MISMATCH');
        expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('10');
        const c5 = await paymentCase(env, buyer, seller.wallet.publicKey(), '5');
        const v5 = await verify(c5, { resourceId: resource.id });
        expect(v5.status).toBe(200);
        const res = await settle(v5.body.paymentAttemptId, c5, resource.id);
        expect(res.status).toBe(200);
        const receipt = await request(app()).get(`/v1/receipts/${res.body.receiptId}`);
        expect(receipt.body).toMatchObject({ amount: '5', status: 'settled' });
        expect(await row('SELECT version_id FROM receipts WHERE id = :id', { id: res.body.receiptId })).toEqual({
          version_id: patched.body.versionId,
        });
        // The price changes again after settlement: the finalizer restoring the receipt still pins the settled terms.
        const v3 = await request(app())
          .patch(`/v1/resources/${resource.id}`)
          .set(bearer(seller.apiKey))
          .send({ amount: '7' });
        expect(v3.status).toBe(200);
        const finalizer = facilitatorWorker(env, 'receipt-finalizer-worker');
        await env.svc.db.query('DELETE FROM receipts WHERE id = :id', { replacements: { id: res.body.receiptId } });
        await finalizer.run({});
        expect(
          await row('SELECT version_id FROM receipts WHERE payment_attempt_id = :id', { id: v5.body.paymentAttemptId }),
        ).toEqual({ version_id: patched.body.versionId });
      },
    );
  });

  describe('no cross-tenant attribution', () => {
    it("when seller A registers seller B's URL or B's payTo, POST /v1/resources refuses it", async () => {
      const a = await signUpSeller(app());
      const b = await signUpSeller(app());
      const url = await request(app())
        .post('/v1/resources')
        .set(bearer(a.apiKey))
        .send(resourceInput(a, { url: `https://${b.domain}/v1/forecast/{city}` }));
      expect(url.status).toBe(400);
      expect(url.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'url' })]));
      const pay = await request(app())
        .post('/v1/resources')
        .set(bearer(a.apiKey))
        .send(resourceInput(a, { payTo: b.wallet.publicKey() }));
      expect(pay.status).toBe(400);
      expect(pay.body.error.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'payTo' })]));
      const own = await request(app()).post('/v1/resources').set(bearer(a.apiKey)).send(resourceInput(a));
      expect(own.status).toBe(201);
      const patch = await request(app())
        .patch(`/v1/resources/${own.body.id ?? own.body.resource?.id}`)
        .set(bearer(a.apiKey))
        .send({ payTo: b.wallet.publicKey() });
      expect(patch.status).toBe(400);
    });

    it(
      'when two sellers hold resources with the same URL and payTo (rows older than the rules), verify-by-URL ' +
        "links neither resource; an anonymous verify is attributed to nobody, the payTo owner's own verify to it",
      async () => {
        const first = await sellerWithResource(env, '0.5');
        const second = await sellerWithResource(env, '0.5');
        await env.svc.db.query('UPDATE resources SET url = :url, pay_to = :payTo WHERE id = :id', {
          replacements: {
            url: `https://${first.seller.domain}/v1/forecast/{city}`,
            payTo: first.seller.wallet.publicKey(),
            id: second.resource.id,
          },
        });
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, first.seller.wallet.publicKey(), '0.5', {
          requirements: { resource: `https://${first.seller.domain}/v1/forecast/oslo` },
        });
        const res = await verify(c);
        expect(res.status).toBe(200);
        // Issue #29: an anonymous verify of a URL linked to no resource writes nothing into any seller's payment list.
        expect(
          await row('SELECT resource_id, seller_id FROM payment_attempts WHERE id = :id', {
            id: res.body.paymentAttemptId,
          }),
        ).toEqual({ resource_id: null, seller_id: null });
        const own = await paymentCase(env, buyer, first.seller.wallet.publicKey(), '0.5', {
          requirements: { resource: `https://${first.seller.domain}/v1/forecast/oslo` },
        });
        const mine = await request(env.svc.app)
          .post('/v1/verify')
          .set(bearer(first.seller.apiKey))
          .send({ paymentPayload: own.payload, paymentRequirements: own.requirements });
        expect(mine.status).toBe(200);
        expect(
          await row('SELECT resource_id, seller_id FROM payment_attempts WHERE id = :id', {
            id: mine.body.paymentAttemptId,
          }),
        ).toEqual({ resource_id: null, seller_id: first.seller.id });
      },
    );
  });

  describe('bounded inputs', () => {
    it(
      'when an authorization stays valid far longer than maxTimeoutSeconds, verify fails with ' +
        'INVALID_PAYMENT_PAYLOAD',
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, payTo, '0.5', {
          sign: { expiration: env.network.latestLedger() + 100_000 },
          requirements: { maxTimeoutSeconds: 60 },
        });
        const res = await verify(c);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('INVALID_PAYMENT_PAYLOAD');
        const absent = await paymentCase(env, buyer, payTo, '0.5', {
          sign: { expiration: env.network.latestLedger() + 100_000 },
          requirements: { maxTimeoutSeconds: undefined },
        });
        expect((await verify(absent)).body.error.code).toBe('INVALID_PAYMENT_PAYLOAD');
      },
    );

    it(
      "when a caller sends an invented network, the facilitator metrics label it 'unsupported', never the " +
        "caller's string",
      async () => {
        const buyer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, buyer, payTo, '0.5', { payload: { network: 'stellar:evil-label-0001' } });
        const res = await verify(c);
        expect(res.status).toBe(400);
        const text = await env.svc.metrics.registry.metrics();
        expect(text).not.toContain('evil-label-0001');
        expect(text).toMatch(/facilitator_[a-z_]+\{[^}]*network="unsupported"/);
      },
    );
  });
});

describe('facilitator payment safety: the RPC connection drops after it took the transaction', () => {
  let env: FacilitatorEnv;
  let proxy: http.Server;
  let dropSubmitReply = false;

  beforeAll(async () => {
    env = await startFacilitatorEnv({
      ledgerCloseMs: 0,
      facilitator: { channelAccounts: 1, confirmGraceMs: 300, txTimeoutSeconds: 2, pollMs: 20 },
      // A real HTTP hop in front of the RPC that forwards every call, and can drop the reply to sendTransaction.
      rpcUrl: async (real) => {
        proxy = http.createServer((req, res) => {
          const chunks: Buffer[] = [];
          req.on('data', (c: Buffer) => chunks.push(c));
          req.on('end', async () => {
            const body = Buffer.concat(chunks).toString('utf8');
            const upstream =
              req.method === 'GET' // friendbot and the like, on the network's base URL
                ? await fetch(new URL(req.url ?? '/', real.replace(/\/rpc\/?$/, '/')))
                : await fetch(real, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
            const text = await upstream.text();
            if (dropSubmitReply && body.includes('"sendTransaction"')) return void req.socket.destroy();
            res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
          });
        });
        await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
        return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/rpc`;
      },
    });
  });
  afterAll(async () => {
    await env.stop();
    proxy.closeAllConnections();
    await new Promise((r) => proxy.close(r));
  });

  it(
    'when the submission reply is lost, settle answers 202 settlement_pending (never resubmits) and the ' +
      'confirmation worker records the outcome',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '1');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
      const v = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements });
      expect(v.status).toBe(200);
      dropSubmitReply = true;
      const res = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
      dropSubmitReply = false;
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({
        ok: true,
        status: 'settlement_pending',
        transactionHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      await env.network.closeLedger();
      await facilitatorWorker(env, 'settlement-confirmation-worker').run({ olderThanSeconds: 0 });
      const settlement = await request(env.svc.app).get(`/v1/settlements/${res.body.transactionHash}`);
      expect(settlement.body).toMatchObject({ status: 'settled' });
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('0.5');
      expect(await metricValue(env.svc.metrics.registry, 'ledger_rpc_requests_total', 'method="sendTransaction"')).toBe(
        1,
      );
    },
  );
});

/** A second facilitator area on the same database and network: another process running the workers. */

void Keypair;
