/**
 * Issue #29: no stranger can turn the facilitator against a seller. Each test is an attack an outside review ran
 * against `npm start` (local simulation: the real service, database and local network with real XDR and ed25519
 * signatures), named after the attack, asserting what the attacker sees and what the ledger, the database and the
 * metrics hold afterwards.
 */
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { QueryTypes } from 'sequelize';
import { bearer, signUpSeller } from '../support/fixtures';
import { OPERATOR_KEY } from '../support/test-service';
import {
  fundedBuyer,
  metric,
  paymentCase,
  sellerWithResource,
  sendTransactions,
  startFacilitatorEnv,
  x402Body,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';
import { createRetentionRepository } from '../../src/data/retention-repository';

describe('strangers against sellers (issue #29), each attack against the running service on the local network', () => {
  let env: FacilitatorEnv;
  const app = () => env.svc.app;
  const verify = (c: PaymentCase, extra: Record<string, unknown> = {}) =>
    request(app())
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, ...extra });
  const settleV1 = (id: string, c: PaymentCase, resourceId: string) =>
    request(app()).post('/v1/settle').send({ paymentAttemptId: id, paymentPayload: c.payload, resourceId });
  const attemptsOf = (payer: string) =>
    env.svc.db.query<{ status: string; resource_id: string | null; seller_id: string | null }>(
      'SELECT status, resource_id, seller_id FROM payment_attempts WHERE payer = :p ORDER BY id',
      {
        replacements: { p: payer },
        type: QueryTypes.SELECT,
      },
    );

  beforeAll(async () => {
    env = await startFacilitatorEnv({ facilitator: { channelAccounts: 4 } });
  });
  afterAll(() => env.stop());

  describe('attack 1: underpaying a cataloged resource through /x402', () => {
    it(
      "when a stranger with no key signs 0.01 to a seller's wallet for its cataloged 1 USDC URL with " +
        'requirements that say 0.01, verify and settle both refuse it and nothing is linked to the resource',
      async () => {
        const { seller, resource } = await sellerWithResource(env, '1');
        const stranger = await fundedBuyer(env, '5');
        const payTo = seller.wallet.publicKey();
        const c = await paymentCase(env, stranger, payTo, '0.01');
        const body = x402Body(env, stranger, c, { amount: '0.01', payTo }, resource.url);
        const sends = await sendTransactions(env);
        const verified = await request(app()).post('/x402/verify').send(body);
        expect(verified.body).toMatchObject({
          isValid: false,
          invalidReason: 'invalid_exact_stellar_payload_wrong_amount',
        });
        const settled = await request(app()).post('/x402/settle').send(body);
        expect(settled.body).toMatchObject({
          success: false,
          errorReason: 'invalid_exact_stellar_payload_wrong_amount',
          transaction: '',
        });
        expect(settled.body.errorMessage).toMatch(/^AMOUNT_MISMATCH: .*current price is 1 USDC/);
        expect(await sendTransactions(env)).toBe(sends);
        expect(env.network.balance(stranger.publicKey(), 'USDC')).toBe('5');
        expect(await attemptsOf(stranger.publicKey())).toEqual([]);
        const list = await request(app()).get(`/v1/sellers/${seller.id}/payments`).set(bearer(seller.apiKey));
        expect(list.body.items).toEqual([]);
      },
    );

    it(
      "when a stranger names a seller's cataloged URL with its own wallet as payTo, the settle is refused " +
        '(RECIPIENT_MISMATCH) and no fee is sponsored',
      async () => {
        const { resource } = await sellerWithResource(env, '0.5');
        const squatter = await signUpSeller(env.svc.app);
        await env.network.fundAccount(squatter.wallet.publicKey());
        await env.network.faucet(squatter.wallet.publicKey(), 'USDC', '0.0000001');
        const payer = await fundedBuyer(env, '5');
        const c = await paymentCase(env, payer, squatter.wallet.publicKey(), '0.5');
        const sends = await sendTransactions(env);
        const res = await request(app())
          .post('/x402/settle')
          .send(x402Body(env, payer, c, { amount: '0.5', payTo: squatter.wallet.publicKey() }, resource.url));
        expect(res.body).toMatchObject({
          success: false,
          errorReason: 'invalid_exact_stellar_payload_wrong_recipient',
        });
        expect(await sendTransactions(env)).toBe(sends);
        expect(await attemptsOf(payer.publicKey())).toEqual([]);
      },
    );

    it(
      'a buyer paying the cataloged price through /x402 settles once, linked to the resource (the honest path ' +
        'still works)',
      async () => {
        const { seller, resource } = await sellerWithResource(env, '0.3');
        const buyer = await fundedBuyer(env, '1');
        const payTo = seller.wallet.publicKey();
        const c = await paymentCase(env, buyer, payTo, '0.3');
        const res = await request(app())
          .post('/x402/settle')
          .send(x402Body(env, buyer, c, { amount: '0.3', payTo }, resource.url));
        expect(res.body).toMatchObject({ success: true });
        expect(await attemptsOf(buyer.publicKey())).toEqual([
          { status: 'settled', resource_id: resource.id, seller_id: seller.id },
        ]);
      },
    );
  });

  describe("attack 2: switching off a seller's sales for the day", () => {
    it(
      "when a stranger fires nine anonymous 0.0001 settles naming a seller's 1 USDC URL, none is sponsored, the " +
        "seller's fee budget is untouched and its real buyer still settles",
      async () => {
        const { seller, resource } = await sellerWithResource(env, '1');
        const payTo = seller.wallet.publicKey();
        const stranger = await fundedBuyer(env, '1');
        const sends = await sendTransactions(env);
        const dust = await Promise.all(
          Array.from({ length: 9 }, async () => {
            const c = await paymentCase(env, stranger, payTo, '0.0001');
            return request(app())
              .post('/x402/settle')
              .send(x402Body(env, stranger, c, { amount: '0.0001', payTo }, resource.url));
          }),
        );
        for (const d of dust)
          expect(d.body).toMatchObject({ success: false, errorReason: 'invalid_exact_stellar_payload_wrong_amount' });
        expect(await sendTransactions(env)).toBe(sends);
        const fees = await env.svc.db.query('SELECT count(*)::int AS n FROM seller_fee_days WHERE seller_id = :id', {
          replacements: { id: seller.id },
          plain: true,
        });
        expect(fees).toEqual({ n: 0 });
        const buyer = await fundedBuyer(env, '2');
        const c = await paymentCase(env, buyer, payTo, '1');
        const real = await request(app())
          .post('/x402/settle')
          .send(x402Body(env, buyer, c, { amount: '1', payTo }, resource.url));
        expect(real.body).toMatchObject({ success: true });
      },
    );
  });

  describe("attack 3: ruining a competitor's record with concurrent dust from one wallet", () => {
    it(
      'when a wallet holding 0.0001 USDC sends four concurrent settles of 0.0001, one lands, none fails on the ' +
        'ledger, and the seller keeps a 100 % success rate and pays one fee',
      async () => {
        const { seller, resource } = await sellerWithResource(env, '0.0001');
        const payer = await fundedBuyer(env, '0.0001');
        const payTo = seller.wallet.publicKey();
        const cases = await Promise.all([0, 1, 2, 3].map(() => paymentCase(env, payer, payTo, '0.0001')));
        const ids: string[] = [];
        for (const c of cases) {
          const v = await verify(c, { resourceId: resource.id });
          expect(v.status).toBe(200);
          ids.push(v.body.paymentAttemptId);
        }
        const sends = await sendTransactions(env);
        const answers = await Promise.all(cases.map((c, i) => settleV1(ids[i], c, resource.id)));
        expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
        for (const a of answers.filter((x) => x.status !== 200))
          expect(a.body.error.code + ' ' + a.body.error.message).toMatch(/^INSUFFICIENT_BALANCE /);
        expect(await sendTransactions(env)).toBe(sends + 1);
        const failedOnLedger = await env.svc.db.query(
          `SELECT count(*)::int AS n FROM settlements WHERE status = 'failed'`,
          { plain: true },
        );
        expect(failedOnLedger).toEqual({ n: 0 });
        const r = await request(app()).get(`/v1/resources/${resource.id}`);
        expect(r.body.settlementStats).toMatchObject({ settledCount: 1, successRate: 1 });
        const fees = await env.svc.db.query<{ settlements: number }>(
          'SELECT settlements FROM seller_fee_days WHERE seller_id = :id',
          { replacements: { id: seller.id }, type: QueryTypes.SELECT },
        );
        expect(fees).toEqual([{ settlements: 1 }]);
      },
    );
  });

  describe("attack 4: rows in a seller's payment list from anonymous verifies", () => {
    it(
      "when a stranger verifies payments to a seller's wallet for URLs the seller never sold, the seller's " +
        'payment list stays empty and /x402/verify commits nothing',
      async () => {
        const seller = await signUpSeller(env.svc.app);
        await env.network.fundAccount(seller.wallet.publicKey());
        await env.network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
        const stranger = await fundedBuyer(env, '1');
        const payTo = seller.wallet.publicKey();
        const c1 = await paymentCase(env, stranger, payTo, '0.01', {
          requirements: { resource: 'https://never-sold.example.org/a' },
        });
        expect((await verify(c1)).status).toBe(200);
        const c2 = await paymentCase(env, stranger, payTo, '0.01');
        const before = await env.svc.db.query('SELECT count(*)::int AS n FROM payment_attempts', { plain: true });
        const x = await request(app())
          .post('/x402/verify')
          .send(x402Body(env, stranger, c2, { amount: '0.01', payTo }, 'https://never-sold.example.org/b'));
        // Anonymous: refused as settle would refuse it (issue #30); with the seller's key it is valid, and commits
        // nothing either way.
        expect(x.body).toMatchObject({ isValid: false, invalidReason: 'settle_exact_stellar_seller_key_required' });
        const keyed = await request(app())
          .post('/x402/verify')
          .set(bearer(seller.apiKey))
          .send(x402Body(env, stranger, c2, { amount: '0.01', payTo }, 'https://never-sold.example.org/b'));
        expect(keyed.body).toMatchObject({ isValid: true });
        expect(await env.svc.db.query('SELECT count(*)::int AS n FROM payment_attempts', { plain: true })).toEqual(
          before,
        );
        const list = await request(app()).get(`/v1/sellers/${seller.id}/payments`).set(bearer(seller.apiKey));
        expect(list.status).toBe(200);
        expect(list.body.items).toEqual([]);
        expect(await attemptsOf(stranger.publicKey())).toEqual([
          { status: 'verified', resource_id: null, seller_id: null },
        ]);
      },
    );

    it('verified attempts that expired unsettled are purged by the retention worker like failed ones', async () => {
      const { resource, seller } = await sellerWithResource(env, '0.01');
      const payer = await fundedBuyer(env, '1');
      const c = await paymentCase(env, payer, seller.wallet.publicKey(), '0.01');
      const v = await verify(c, { resourceId: resource.id });
      await env.svc.db.query(`UPDATE payment_attempts SET status = 'expired' WHERE id = :id`, {
        replacements: { id: v.body.paymentAttemptId },
      });
      await env.svc.db.query(`UPDATE payment_attempts SET created_at = now() - interval '40 days' WHERE id = :id`, {
        replacements: { id: v.body.paymentAttemptId },
      });
      const deleted = await createRetentionRepository(env.svc.db).deleteExpired('payment_attempts', 30);
      expect(deleted).toBeGreaterThanOrEqual(1);
      expect(await attemptsOf(payer.publicKey())).toEqual([]);
    });
  });

  describe('attack 5: fee drain with free sellers and wallets that do not exist', () => {
    it(
      'when a free seller signs up with a wallet that does not exist on the ledger, no settlement to it is ' +
        'sponsored',
      async () => {
        const ghost = await signUpSeller(env.svc.app); // never funded: no account, no trustline
        const payer = await fundedBuyer(env, '1');
        const c = await paymentCase(env, payer, ghost.wallet.publicKey(), '0.01');
        const sends = await sendTransactions(env);
        const res = await request(app())
          .post('/x402/settle')
          .set(bearer(ghost.apiKey))
          .send(
            x402Body(env, payer, c, { amount: '0.01', payTo: ghost.wallet.publicKey() }, 'https://ghost.example.org/x'),
          );
        expect(res.body.success).toBe(false);
        expect(res.body.errorMessage).toMatch(/^(ACCOUNT_NOT_FOUND|TRUSTLINE_REQUIRED): /);
        expect(await sendTransactions(env)).toBe(sends);
        const fees = await env.svc.db.query('SELECT count(*)::int AS n FROM seller_fee_days WHERE seller_id = :id', {
          replacements: { id: ghost.id },
          plain: true,
        });
        expect(fees).toEqual({ n: 0 });
      },
    );
  });
});

describe(
  'one transfer in flight per payer, even when an operator lets ' + 'a payer hold two channels (issue #29 attack 3)',
  () => {
    it(
      "when a payer's second settle finds its first transfer still in flight, it answers 503 with the payer-turn " +
        'rule at once, nothing is submitted, and the same settle succeeds once the first has landed',
      async () => {
        // Manual ledgers: the first transfer stays in flight until the test closes a ledger.
        const env = await startFacilitatorEnv({
          ledgerCloseMs: 0,
          facilitator: { channelAccounts: 4, channelsPerPayer: 2, pollMs: 20 },
        });
        try {
          const { seller, resource } = await sellerWithResource(env, '0.1');
          const payer = await fundedBuyer(env, '1');
          const payTo = seller.wallet.publicKey();
          const [a, b] = await Promise.all([
            paymentCase(env, payer, payTo, '0.1'),
            paymentCase(env, payer, payTo, '0.1'),
          ]);
          const verified = await Promise.all(
            [a, b].map((c) =>
              request(env.svc.app)
                .post('/v1/verify')
                .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId: resource.id }),
            ),
          );
          await env.network.closeLedger();
          const settle = (c: PaymentCase, id: string) =>
            request(env.svc.app)
              .post('/v1/settle')
              .send({ paymentAttemptId: id, paymentPayload: c.payload, resourceId: resource.id });
          const first = settle(a, verified[0].body.paymentAttemptId).then((r) => r);
          for (let i = 0; i < 250; i++) {
            const row = await env.svc.db.query(`SELECT count(*)::int AS n FROM settlements WHERE status = 'pending'`, {
              plain: true,
            });
            if ((row as { n: number }).n === 1) break;
            await new Promise((r) => setTimeout(r, 20));
          }
          const sends = await sendTransactions(env);
          const second = await settle(b, verified[1].body.paymentAttemptId);
          expect(second.status).toBe(503);
          expect(second.body.error).toMatchObject({
            code: 'SERVICE_UNAVAILABLE',
            details: [expect.objectContaining({ code: 'accountability.one_transfer_in_flight_per_payer' })],
          });
          expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
          expect(await sendTransactions(env)).toBe(sends);
          const closer = setInterval(() => void env.network.closeLedger(), 100);
          try {
            expect((await first).body).toMatchObject({ ok: true, status: 'settled' });
            const again = await settle(b, verified[1].body.paymentAttemptId);
            expect(again.body).toMatchObject({ ok: true, status: 'settled' });
          } finally {
            clearInterval(closer);
          }
          expect(env.network.balance(payer.publicKey(), 'USDC')).toBe('0.8');
        } finally {
          await env.stop();
        }
      },
    );
  },
);

describe('fee budgets per payer, per client address and in all (issue #29 attacks 2 and 5)', () => {
  /** One settlement's fee on the local network is ~16,000 stroops: these budgets admit exactly one settlement each. */
  const ONE_SETTLEMENT = 25_000;

  async function selfDealing(
    env: FacilitatorEnv,
  ): Promise<{ pay(url?: string): Promise<request.Response>; sellerId: string }> {
    const seller = await signUpSeller(env.svc.app);
    await env.network.fundAccount(seller.wallet.publicKey());
    await env.network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
    const payer = await fundedBuyer(env, '1');
    return {
      sellerId: seller.id,
      async pay(url = `https://self-dealing.example.org/${Math.random()}`) {
        const c = await paymentCase(env, payer, seller.wallet.publicKey(), '0.0001');
        return request(env.svc.app)
          .post('/x402/settle')
          .set(bearer(seller.apiKey))
          .send(x402Body(env, payer, c, { amount: '0.0001', payTo: seller.wallet.publicKey() }, url));
      },
    };
  }

  it(
    'when one client signs up free sellers and pays itself dust with their keys, its address budget bounds them ' +
      'all: the next settle is refused before any channel or submission, with Retry-After',
    async () => {
      const env = await startFacilitatorEnv({
        facilitator: { feeBudgets: { client: ONE_SETTLEMENT, seller: null, payer: null, global: null } },
      });
      try {
        const a = await selfDealing(env);
        const b = await selfDealing(env);
        expect((await a.pay()).body).toMatchObject({ success: true });
        const sends = await sendTransactions(env);
        const refused = await b.pay();
        expect(refused.body).toMatchObject({
          success: false,
          errorReason: 'settle_exact_stellar_fee_budget_exhausted',
        });
        expect(refused.body.errorMessage).toMatch(/client address's network-fee budget/);
        expect(await sendTransactions(env)).toBe(sends);
        expect(await metric(env, 'facilitator_fee_budget_refusals_total', 'scope="client"')).toBe(1);
        const v1 = await request(env.svc.app).post('/v1/settle').send({});
        expect(v1.status).toBe(400);
      } finally {
        await env.stop();
      }
    },
  );

  it(
    'when one payer spends its daily fee budget, its next settle is refused (payer), and another payer of the ' +
      "same seller still settles: one payer's dust never spends the seller's budget",
    async () => {
      const env = await startFacilitatorEnv({
        facilitator: { feeBudgets: { payer: ONE_SETTLEMENT, client: null, seller: null, global: null } },
      });
      try {
        const { seller, resource } = await sellerWithResource(env, '0.0001');
        const dusty = await fundedBuyer(env, '1');
        const honest = await fundedBuyer(env, '1');
        const pay = async (who: typeof dusty) => {
          const c = await paymentCase(env, who, seller.wallet.publicKey(), '0.0001');
          return request(env.svc.app)
            .post('/x402/settle')
            .send(x402Body(env, who, c, { amount: '0.0001', payTo: seller.wallet.publicKey() }, resource.url));
        };
        expect((await pay(dusty)).body).toMatchObject({ success: true });
        const second = await pay(dusty);
        expect(second.body).toMatchObject({ success: false, errorReason: 'settle_exact_stellar_fee_budget_exhausted' });
        expect(second.body.errorMessage).toMatch(/payer's network-fee budget/);
        expect((await pay(honest)).body).toMatchObject({ success: true });
        const v1 = await request(env.svc.app).get('/v1/operations/seller-fees').set(bearer(OPERATOR_KEY));
        expect(v1.body.items.find((i: { sellerId: string }) => i.sellerId === seller.id)).toMatchObject({
          settlements: 2,
        });
      } finally {
        await env.stop();
      }
    },
  );

  it(
    'when sponsored fees reach the daily cap, every settle is refused (global) with 429 and Retry-After, and the ' +
      "cap and today's figure are metrics for the alert",
    async () => {
      const env = await startFacilitatorEnv({
        facilitator: { feeBudgets: { global: ONE_SETTLEMENT, client: null, seller: null, payer: null } },
      });
      try {
        const { seller, resource } = await sellerWithResource(env, '0.01');
        const payTo = seller.wallet.publicKey();
        const first = await fundedBuyer(env, '1');
        const c1 = await paymentCase(env, first, payTo, '0.01');
        const v1 = await request(env.svc.app)
          .post('/v1/verify')
          .send({ paymentPayload: c1.payload, paymentRequirements: c1.requirements, resourceId: resource.id });
        expect(
          (
            await request(env.svc.app)
              .post('/v1/settle')
              .send({ paymentAttemptId: v1.body.paymentAttemptId, paymentPayload: c1.payload, resourceId: resource.id })
          ).status,
        ).toBe(200);
        const second = await fundedBuyer(env, '1');
        const c2 = await paymentCase(env, second, payTo, '0.01');
        const v2 = await request(env.svc.app)
          .post('/v1/verify')
          .send({ paymentPayload: c2.payload, paymentRequirements: c2.requirements, resourceId: resource.id });
        const refused = await request(env.svc.app)
          .post('/v1/settle')
          .send({ paymentAttemptId: v2.body.paymentAttemptId, paymentPayload: c2.payload, resourceId: resource.id });
        expect(refused.status).toBe(429);
        expect(refused.body.error).toMatchObject({
          code: 'FEE_BUDGET_EXHAUSTED',
          details: [expect.objectContaining({ code: 'accountability.fee_budget', field: 'global' })],
        });
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        // The payment was not used: it stays verified, settleable once the cap allows.
        expect(
          (await request(env.svc.app).get(`/v1/payments/${v2.body.paymentAttemptId}`).set(bearer(OPERATOR_KEY))).body
            .status,
        ).toBe('verified');
        expect(await metric(env, 'facilitator_sponsored_fee_cap_stroops', 'network="stellar:testnet"')).toBe(
          ONE_SETTLEMENT,
        );
        expect(
          await metric(env, 'facilitator_sponsored_fees_today_stroops', 'network="stellar:testnet"'),
        ).toBeGreaterThan(0);
      } finally {
        await env.stop();
      }
    },
  );

  it(
    'a payer that is a fresh keypair with no account cannot reserve anything: its settle is refused by the ' +
      'simulation and no budget moves',
    async () => {
      const env = await startFacilitatorEnv();
      try {
        const { seller, resource } = await sellerWithResource(env, '0.01');
        const nobody = Keypair.random();
        const c = await paymentCase(env, nobody, seller.wallet.publicKey(), '0.01');
        const res = await request(env.svc.app)
          .post('/x402/settle')
          .send(x402Body(env, nobody, c, { amount: '0.01', payTo: seller.wallet.publicKey() }, resource.url));
        expect(res.body.success).toBe(false);
        const rows = await env.svc.db.query('SELECT count(*)::int AS n FROM party_fee_days', { plain: true });
        expect(rows).toEqual({ n: 0 });
      } finally {
        await env.stop();
      }
    },
  );
});
