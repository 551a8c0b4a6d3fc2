/**
 * Verify's records (its Idempotency-Key claim, the verified attempt, the stored answer) commit with
 * `synchronous_commit = off` (they move no money: a verify reserves nothing and submits nothing); everything a settle
 * writes keeps flushed commits. Shown from inside PostgreSQL: a probe trigger on every table records, for each row
 * written, the `synchronous_commit` in force in the writing transaction and where it came from (`session`: set by the
 * statement itself; anything else: the server's default, which the parallel suites set to off for speed).
 *
 * What a client sees when a PostgreSQL crash loses such records (the crash's outcome reproduced by deleting or
 * clearing exactly the rows it can lose; commits are lost newest first, the WAL being one sequence): a settle naming
 * the lost attempt is refused 404 NOT_FOUND, and the idempotent retry runs the verify again and gets a new attempt
 * that settles once; a lost stored answer is 409 IDEMPOTENCY_CONFLICT (Retry-After) until the claim counts as
 * abandoned, then REPLAY_DETECTED naming the attempt that still holds the authorization, which settles once.
 * Real local network, real PostgreSQL, real HTTP.
 */
import request from 'supertest';
import { QueryTypes } from 'sequelize';
import type { Keypair } from '@stellar/stellar-sdk';
import { bearer } from '../support/fixtures';
import type { SignedUpSeller } from '../support/fixtures';
import { fundedBuyer, paymentCase, sellerWithResource, startFacilitatorEnv, type FacilitatorEnv } from './helpers';

interface ProbeRow {
  tbl: string;
  op: string;
  setting: string;
  source: string;
}

const PROBE_SQL = `
  CREATE TABLE commit_probe (id bigserial PRIMARY KEY, tbl text, op text, setting text, source text);
  CREATE FUNCTION commit_probe_row() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO commit_probe (tbl, op, setting, source)
      SELECT TG_TABLE_NAME, TG_OP, setting, source FROM pg_settings WHERE name = 'synchronous_commit';
    RETURN NULL;
  END $$;
  DO $$ DECLARE t text; BEGIN
    FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> 'commit_probe'
    LOOP
      EXECUTE format('CREATE TRIGGER zz_commit_probe AFTER INSERT OR UPDATE OR DELETE ON %I ' ||
        'FOR EACH ROW EXECUTE FUNCTION commit_probe_row()', t);
    END LOOP;
  END $$;`;

describe("verify's records commit without waiting for the WAL flush; settle's stay flushed", () => {
  let env: FacilitatorEnv;
  let buyer: Keypair;
  let seller: SignedUpSeller;
  let resourceId: string;

  beforeAll(async () => {
    env = await startFacilitatorEnv();
    buyer = await fundedBuyer(env, '10');
    const made = await sellerWithResource(env, '0.25');
    seller = made.seller;
    resourceId = made.resource.id;
    await env.svc.db.query(PROBE_SQL);
  });
  afterAll(() => env.stop());

  const lastProbe = async () =>
    Number(
      (
        (await env.svc.db.query('SELECT coalesce(max(id), 0) AS n FROM commit_probe', {
          type: QueryTypes.SELECT,
        })) as Array<{ n: string }>
      )[0].n,
    );
  const probesAfter = async (from: number, to: number) =>
    (await env.svc.db.query(
      'SELECT tbl, op, setting, source FROM commit_probe WHERE id > :from AND id <= :to ORDER BY id',
      { replacements: { from, to }, type: QueryTypes.SELECT },
    )) as ProbeRow[];
  const verify = (body: object, key: string) =>
    request(env.svc.app).post('/v1/verify').set(bearer(seller.apiKey)).set('Idempotency-Key', key).send(body);
  const settle = (body: object, key: string) =>
    request(env.svc.app).post('/v1/settle').set(bearer(seller.apiKey)).set('Idempotency-Key', key).send(body);

  it(
    "verify's Idempotency-Key claim, attempt and stored answer run with synchronous_commit off set by their own " +
      "statements; every row a settle writes (attempt, settlement, receipt, its Idempotency-Key) keeps the server's",
    async () => {
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25');
      const before = await lastProbe();
      const verified = await verify({ paymentPayload: c.payload, paymentRequirements: c.requirements }, 'vc-verify-1');
      expect(verified.status).toBe(200);
      const afterVerify = await lastProbe();
      const verifyRows = await probesAfter(before, afterVerify);
      expect(verifyRows.map((r) => `${r.tbl} ${r.op}`)).toEqual([
        'idempotency_keys INSERT',
        'payment_attempts INSERT',
        'idempotency_keys UPDATE',
      ]);
      for (const r of verifyRows) expect(r).toMatchObject({ setting: 'off', source: 'session' });

      const settled = await settle(
        { paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId },
        'vc-settle-1',
      );
      expect(settled.status).toBe(200);
      const settleRows = await probesAfter(afterVerify, await lastProbe());
      const tables = new Set(settleRows.map((r) => r.tbl));
      for (const t of ['idempotency_keys', 'payment_attempts', 'settlements', 'receipts']) expect(tables).toContain(t);
      expect(settleRows.filter((r) => r.source === 'session')).toEqual([]);
    },
  );

  it(
    'attack: a settle sent under the Idempotency-Key of a verify (a deferred record) is refused 409 and writes ' +
      "nothing; settled under its own key, every row keeps the server's flushed commit",
    async () => {
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25');
      const verified = await verify({ paymentPayload: c.payload, paymentRequirements: c.requirements }, 'vc-reuse-1');
      expect(verified.status).toBe(200);
      const body = { paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId };
      const before = await lastProbe();
      const reused = await settle(body, 'vc-reuse-1');
      expect({ status: reused.status, code: reused.body.error?.code }).toEqual({
        status: 409,
        code: 'IDEMPOTENCY_CONFLICT',
      });
      expect(await probesAfter(before, await lastProbe())).toEqual([]);
      const own = await settle(body, 'vc-reuse-1-settle');
      expect(own.status).toBe(200);
      const rows = await probesAfter(before, await lastProbe());
      expect(rows.map((r) => r.tbl)).toContain('settlements');
      expect(rows.filter((r) => r.source === 'session')).toEqual([]);
    },
  );

  it(
    'a verify whose attempt and Idempotency-Key records a database crash lost: a settle naming the lost attempt is ' +
      'refused 404 NOT_FOUND, the idempotent retry verifies again, and the money moves once',
    async () => {
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25');
      const body = { paymentPayload: c.payload, paymentRequirements: c.requirements };
      const first = await verify(body, 'vc-verify-2');
      expect(first.status).toBe(200);
      const lost = first.body.paymentAttemptId as string;
      // What a PostgreSQL crash can lose of it (all three records, the newest commits).
      await env.svc.db.query(
        `DELETE FROM idempotency_keys WHERE key = 'vc-verify-2'; DELETE FROM payment_attempts WHERE id = '${lost}'`,
      );
      const stale = await settle({ paymentAttemptId: lost, paymentPayload: c.payload, resourceId }, 'vc-settle-2a');
      expect(stale.status).toBe(404);
      expect(stale.body).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', requestId: expect.any(String) } });

      const buyerBefore = env.network.balance(buyer.publicKey(), 'USDC');
      const again = await verify(body, 'vc-verify-2');
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      expect(again.body.paymentAttemptId).not.toBe(lost);
      const settled = await settle(
        { paymentAttemptId: again.body.paymentAttemptId, paymentPayload: c.payload, resourceId },
        'vc-settle-2b',
      );
      expect(settled.status).toBe(200);
      const twice = await settle(
        { paymentAttemptId: again.body.paymentAttemptId, paymentPayload: c.payload, resourceId },
        'vc-settle-2c',
      );
      expect(twice.status).toBe(409);
      expect(twice.body.error.code).toBe('REPLAY_DETECTED');
      expect(Number(buyerBefore) - Number(env.network.balance(buyer.publicKey(), 'USDC'))).toBeCloseTo(0.25, 7);
    },
  );

  it(
    'a verify whose stored answer a database crash lost: the retry is 409 IDEMPOTENCY_CONFLICT with Retry-After ' +
      'until the claim is abandoned, then REPLAY_DETECTED naming the attempt, which settles once',
    async () => {
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.25');
      const body = { paymentPayload: c.payload, paymentRequirements: c.requirements };
      const first = await verify(body, 'vc-verify-3');
      expect(first.status).toBe(200);
      // The claim and the attempt survived; the stored answer (the newest commit) was lost.
      await env.svc.db.query(
        `UPDATE idempotency_keys SET status_code = NULL, response_body = NULL WHERE key = 'vc-verify-3'`,
      );
      const busy = await verify(body, 'vc-verify-3');
      expect(busy.status).toBe(409);
      expect(busy.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
      expect(busy.headers['retry-after']).toBe('1');
      // A minute later the claim counts as abandoned (ABANDONED_SECONDS) and the retry runs the verify again.
      await env.svc.db.query(
        `UPDATE idempotency_keys SET created_at = now() - interval '61 seconds' WHERE key = 'vc-verify-3'`,
      );
      const replay = await verify(body, 'vc-verify-3');
      expect(replay.status).toBe(409);
      expect(replay.body.error).toMatchObject({
        code: 'REPLAY_DETECTED',
        details: [{ field: 'paymentAttemptId', message: first.body.paymentAttemptId }],
      });
      const buyerBefore = env.network.balance(buyer.publicKey(), 'USDC');
      const settled = await settle(
        { paymentAttemptId: first.body.paymentAttemptId, paymentPayload: c.payload, resourceId },
        'vc-settle-3',
      );
      expect(settled.status).toBe(200);
      expect(Number(buyerBefore) - Number(env.network.balance(buyer.publicKey(), 'USDC'))).toBeCloseTo(0.25, 7);
    },
  );
});
