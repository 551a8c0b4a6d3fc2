// Tables that only grow (issue #19, defect 2): the retention worker deletes what has expired and nothing else, and
// table row counts are metrics.
import request from 'supertest';
import { retentionWorker } from '../../src/jobs/retention-worker';
import { createRetentionRepository } from '../../src/data/retention-repository';
import { createLogger } from '../../src/logger';
import { startTestService, OPERATOR_KEY, type TestService } from '../support/test-service';
import { bearer, signUpSeller } from '../support/fixtures';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

const count = async (sql: string) => ((await svc.db.query(sql)) as [Array<{ n: number }>, unknown])[0][0].n;
const worker = () =>
  retentionWorker({
    store: createRetentionRepository(svc.db),
    metrics: svc.metrics.abuse,
    logger: createLogger({ silent: true }),
    failedAttemptsDays: 30,
  });

async function attempt(id: string, status: string, ageDays: number, sellerId: string | null): Promise<void> {
  await svc.db.query(
    `INSERT INTO payment_attempts (id, seller_id, payment_hash, network, payer, nonce, asset_code, asset_issuer,
      amount, pay_to, status,
       expires_at_ledger, authorization_xdr, created_at, updated_at)
     VALUES (:id, :sellerId, :id, 'stellar:testnet', 'GPAYER', :id, 'USDC', 'GISSUER', 1, 'GPAYTO', :status, 1, 'AAAA',
       now() - make_interval(days => :ageDays), now() - make_interval(days => :ageDays))`,
    { replacements: { id, status, ageDays, sellerId } },
  );
}

describe('tables that only grow: the retention worker', () => {
  it(
    'deletes expired idempotency records, past rate-limit windows, expired sign-up challenges and old failed ' +
      'attempts; keeps everything else',
    async () => {
      const seller = await signUpSeller(svc.app); // one used challenge, not yet expired
      const q = (sql: string) => svc.db.query(sql);
      await q(`INSERT INTO idempotency_keys (scope, key, request_hash, status_code, response_body, created_at) VALUES
      ('ip:1', 'old', 'h', 200, '{}', now() - interval '25 hours'), ('ip:1', 'fresh', 'h', 200, '{}', now()
        - interval '23 hours')`);
      const nowMs = Date.now();
      await q(
        `INSERT INTO rate_limits (key, points, expire) VALUES ('api:ip:past', 5, ${nowMs - 60_000}), ` +
          `('api:ip:current', 5, ${nowMs + 600_000})`,
      );
      await q(`INSERT INTO seller_wallet_challenges (id, wallet_address, message, expires_at, used_at) VALUES
      ('chl_expired', 'GA', 'm', now() - interval '1 minute', NULL),
      ('chl_used_expired', 'GB', 'm', now() - interval '1 minute', now() - interval '3 minutes'),
      ('chl_open', 'GC', 'm', now() + interval '4 minutes', NULL)`);
      await attempt('pay_failed_old', 'verification_failed', 40, seller.id);
      await attempt('pay_failed_recent', 'verification_failed', 1, seller.id);
      await attempt('pay_settled_old', 'settled', 400, seller.id);
      await q(`INSERT INTO settlements (id, payment_attempt_id, transaction_hash, network, amount, asset_code,
        asset_issuer,
      status, evidence, created_at)
      VALUES ('stl_old', 'pay_settled_old', '${'a'.repeat(64)}', 'stellar:testnet', 1, 'USDC', 'GISSUER',
        'settled', 'local_simulation', now() - interval '400 days')`);
      await q(`INSERT INTO receipts (id, payment_attempt_id, settlement_id, seller_id, network, amount, asset_code,
      asset_issuer, status, evidence, created_at)
      VALUES ('rcp_old', 'pay_settled_old', 'stl_old', '${seller.id}', 'stellar:testnet', 1, 'USDC',
        'GISSUER', 'settled', 'local_simulation', now() - interval '400 days')`);

      await worker().run({});

      expect(await count(`SELECT count(*)::int AS n FROM idempotency_keys WHERE scope = 'ip:1' AND key = 'old'`)).toBe(
        0,
      );
      expect(
        await count(`SELECT count(*)::int AS n FROM idempotency_keys WHERE scope = 'ip:1' AND key = 'fresh'`),
      ).toBe(1);
      expect(await count(`SELECT count(*)::int AS n FROM rate_limits WHERE key = 'api:ip:past'`)).toBe(0);
      expect(await count(`SELECT count(*)::int AS n FROM rate_limits WHERE key = 'api:ip:current'`)).toBe(1);
      expect(
        await count(
          `SELECT count(*)::int AS n FROM seller_wallet_challenges WHERE id IN ('chl_expired', 'chl_used_expired')`,
        ),
      ).toBe(0);
      expect(await count(`SELECT count(*)::int AS n FROM seller_wallet_challenges WHERE id = 'chl_open'`)).toBe(1);
      // the seller's own challenge was used a moment ago and has not expired: kept (a replay still reads as one)
      expect(
        await count(
          `SELECT count(*)::int AS n FROM seller_wallet_challenges WHERE wallet_address = ` +
            `'${seller.wallet.publicKey()}'`,
        ),
      ).toBe(1);
      expect(await count(`SELECT count(*)::int AS n FROM payment_attempts WHERE id = 'pay_failed_old'`)).toBe(0);
      expect(
        await count(
          `SELECT count(*)::int AS n FROM payment_attempts WHERE id IN ('pay_failed_recent', 'pay_settled_old')`,
        ),
      ).toBe(2);
      expect(await count(`SELECT count(*)::int AS n FROM settlements WHERE id = 'stl_old'`)).toBe(1);
      expect(await count(`SELECT count(*)::int AS n FROM receipts WHERE id = 'rcp_old'`)).toBe(1);
      expect(await count(`SELECT count(*)::int AS n FROM sellers WHERE id = '${seller.id}'`)).toBe(1);

      // a second run is a no-op (idempotent)
      await worker().run({});
      expect(
        await count(
          `SELECT count(*)::int AS n FROM payment_attempts WHERE id IN ('pay_failed_recent', 'pay_settled_old')`,
        ),
      ).toBe(2);
    },
  );

  it('RETENTION_FAILED_ATTEMPTS_DAYS decides how long failed attempts stay', async () => {
    await attempt('pay_failed_5d', 'verification_failed', 5, null);
    await worker().run({ failedAttemptsDays: 7 });
    expect(await count(`SELECT count(*)::int AS n FROM payment_attempts WHERE id = 'pay_failed_5d'`)).toBe(1);
    await worker().run({ failedAttemptsDays: 3 });
    expect(await count(`SELECT count(*)::int AS n FROM payment_attempts WHERE id = 'pay_failed_5d'`)).toBe(0);
  });

  it(
    'table row counts and deleted rows are metrics; the worker ' + 'is registered with the eight worker figures',
    async () => {
      await worker().run({});
      const text = (await request(svc.app).get('/metrics').set(bearer(OPERATOR_KEY))).text;
      const rows = (table: string) =>
        Number(new RegExp(`^db_table_rows\\{[^}]*table="${table}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1]);
      expect(rows('settlements')).toBe(await count('SELECT count(*)::int AS n FROM settlements'));
      expect(rows('payment_attempts')).toBe(await count('SELECT count(*)::int AS n FROM payment_attempts'));
      expect(rows('idempotency_keys')).toBe(await count('SELECT count(*)::int AS n FROM idempotency_keys'));
      expect(text).toMatch(/^retention_deleted_rows_total\{[^}]*table="payment_attempts"[^}]*\} [1-9]/m);
      for (const figure of [
        'job_queue_depth',
        'job_active',
        'job_completed_total',
        'job_failed_total',
        'job_retries_total',
        'job_dead_letter_total',
        'job_processing_duration_seconds_count',
        'job_last_success_timestamp_seconds',
      ]) {
        expect([figure, new RegExp(`^${figure}\\{[^}]*worker="retention-worker"`, 'm').test(text)]).toEqual([
          figure,
          true,
        ]);
      }
    },
  );
});
