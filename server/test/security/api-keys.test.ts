// The API key lifecycle (issue #19, defect 5): several keys per seller, scoped, expiring, revocable in every process
// within a second, with the operator key rotatable without a restart.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createService, type Service } from '../../src/compose';
import { createLogger } from '../../src/logger';
import { OperatorKeyRing } from '../../src/http/operator-keys';
import { loadConfig } from '../../src/config';
import { OPERATOR_KEY, startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';

let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService();
  seller = await signUpSeller(svc.app);
});
afterAll(async () => {
  await svc.stop();
});

const keysUrl = (sellerId: string) => `/v1/sellers/${sellerId}/keys`;
async function createKey(
  app: Service['app'],
  owner: SignedUpSeller,
  body: Record<string, unknown>,
  auth = owner.apiKey,
) {
  return request(app).post(keysUrl(owner.id)).set(bearer(auth)).send(body);
}
/** Polls until `check` holds or `ms` have passed; answers whether it held. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('seller API keys: create, list, revoke', () => {
  it('the sign-up key is an admin key named "initial", listed without its secret', async () => {
    const res = await request(svc.app).get(keysUrl(seller.id)).set(bearer(seller.apiKey));
    expect(res.status).toBe(200);
    expect(res.body.keys).toHaveLength(1);
    expect(res.body.keys[0]).toMatchObject({
      name: 'initial',
      scope: 'admin',
      expiresAt: null,
      revokedAt: null,
      prefix: seller.apiKey.slice(0, 11),
    });
    expect(JSON.stringify(res.body)).not.toContain(seller.apiKey);
    expect(res.body.keys[0].secret).toBeUndefined();
  });

  it(
    'a new key shows its secret once (201), works at once, and ' + 'is listed with its prefix and never its secret',
    async () => {
      const created = await createKey(svc.app, seller, { name: 'paywall', scope: 'payments' });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        name: 'paywall',
        scope: 'payments',
        expiresAt: null,
        lastUsedAt: null,
        revokedAt: null,
      });
      expect(created.body.id).toMatch(/^key_/);
      expect(created.body.secret).toMatch(/^mk_/);
      expect(created.body.prefix).toBe(created.body.secret.slice(0, 11));
      const use = await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(created.body.secret));
      expect(use.status).toBe(200);
      const list = await request(svc.app).get(keysUrl(seller.id)).set(bearer(seller.apiKey));
      expect(list.body.keys.map((k: { id: string }) => k.id)).toContain(created.body.id);
      expect(JSON.stringify(list.body)).not.toContain(created.body.secret);
      const [[row]] = (await svc.db.query(`SELECT name, scope, prefix FROM api_keys WHERE id = :id`, {
        replacements: { id: created.body.id },
      })) as [Array<Record<string, string>>, unknown];
      expect(row).toEqual({ name: 'paywall', scope: 'payments', prefix: created.body.prefix });
    },
  );

  it(
    'a retry of the creation with the same Idempotency-Key does ' + 'not replay the secret (409 naming the key)',
    async () => {
      const send = () =>
        request(svc.app)
          .post(keysUrl(seller.id))
          .set(bearer(seller.apiKey))
          .set('Idempotency-Key', 'key-create-1')
          .send({ name: 'retry', scope: 'admin' });
      const first = await send();
      expect(first.status).toBe(201);
      const again = await send();
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
      expect(again.body.error.details).toEqual([{ field: 'keyId', message: first.body.id }]);
      expect(JSON.stringify(again.body)).not.toContain(first.body.secret);
    },
  );

  it("another seller's key may not list, create or revoke my keys (403); the operator may", async () => {
    const other = await signUpSeller(svc.app);
    expect((await request(svc.app).get(keysUrl(seller.id)).set(bearer(other.apiKey))).status).toBe(403);
    expect((await createKey(svc.app, seller, { name: 'x', scope: 'admin' }, other.apiKey)).status).toBe(403);
    const mine = await request(svc.app).get(keysUrl(seller.id)).set(bearer(seller.apiKey));
    const del = await request(svc.app)
      .delete(`${keysUrl(seller.id)}/${mine.body.keys[0].id}`)
      .set(bearer(other.apiKey));
    expect(del.status).toBe(403);
    expect((await request(svc.app).get(keysUrl(seller.id)).set(bearer(OPERATOR_KEY))).status).toBe(200);
    const byOperator = await createKey(svc.app, seller, { name: 'made by operator', scope: 'payments' }, OPERATOR_KEY);
    expect(byOperator.status).toBe(201);
    expect((await request(svc.app).get(keysUrl(seller.id))).status).toBe(401);
  });

  it('a key of another seller cannot be revoked through my path (404), nor an unknown id', async () => {
    const other = await signUpSeller(svc.app);
    const theirs = await request(svc.app).get(keysUrl(other.id)).set(bearer(other.apiKey));
    const res = await request(svc.app)
      .delete(`${keysUrl(seller.id)}/${theirs.body.keys[0].id}`)
      .set(bearer(seller.apiKey));
    expect(res.status).toBe(404);
    expect((await request(svc.app).get(`/v1/sellers/${other.id}/payments`).set(bearer(other.apiKey))).status).toBe(200);
    expect(
      (
        await request(svc.app)
          .delete(`${keysUrl(seller.id)}/key_nothing`)
          .set(bearer(seller.apiKey))
      ).status,
    ).toBe(404);
  });

  it('a revoked key answers 401 at once in the process that revoked it, and stays listed with revokedAt', async () => {
    const created = await createKey(svc.app, seller, { name: 'to revoke', scope: 'admin' });
    expect((await request(svc.app).get(keysUrl(seller.id)).set(bearer(created.body.secret))).status).toBe(200);
    const del = await request(svc.app)
      .delete(`${keysUrl(seller.id)}/${created.body.id}`)
      .set(bearer(seller.apiKey));
    expect(del.status).toBe(200);
    expect(del.body.id).toBe(created.body.id);
    expect(typeof del.body.revokedAt).toBe('string');
    expect(
      await within(
        1_000,
        async () => (await request(svc.app).get(keysUrl(seller.id)).set(bearer(created.body.secret))).status === 401,
      ),
    ).toBe(true);
    const list = await request(svc.app).get(keysUrl(seller.id)).set(bearer(seller.apiKey));
    expect(list.body.keys.find((k: { id: string }) => k.id === created.body.id).revokedAt).toBe(del.body.revokedAt);
    const again = await request(svc.app)
      .delete(`${keysUrl(seller.id)}/${created.body.id}`)
      .set(bearer(seller.apiKey));
    expect(again.status).toBe(200);
    expect(again.body.revokedAt).toBe(del.body.revokedAt);
  });

  it(
    'rotation is create-then-revoke: a seller can revoke its ' + 'sign-up key and keep working with the new one',
    async () => {
      const s = await signUpSeller(svc.app);
      const fresh = await createKey(svc.app, s, { name: 'rotated', scope: 'admin' });
      const initial = (await request(svc.app).get(keysUrl(s.id)).set(bearer(s.apiKey))).body.keys.find(
        (k: { name: string }) => k.name === 'initial',
      );
      expect(
        (
          await request(svc.app)
            .delete(`${keysUrl(s.id)}/${initial.id}`)
            .set(bearer(fresh.body.secret))
        ).status,
      ).toBe(200);
      expect((await request(svc.app).get(keysUrl(s.id)).set(bearer(s.apiKey))).status).toBe(401);
      expect((await request(svc.app).get(keysUrl(s.id)).set(bearer(fresh.body.secret))).status).toBe(200);
    },
  );

  it(
    'an expiry in the past, a blank name, an unknown scope or extra fields are 400; more than 20 live keys is ' +
      '409 CONFLICT',
    async () => {
      const s = await signUpSeller(svc.app);
      for (const body of [
        { name: 'late', scope: 'admin', expiresAt: new Date(Date.now() - 1000).toISOString() },
        { name: '   ', scope: 'admin' },
        { name: 'x', scope: 'root' },
        { name: 'x'.repeat(65), scope: 'admin' },
        { name: 'x', scope: 'admin', role: 'operator' },
        { name: 'x', scope: 'admin', expiresAt: '3000-01-01T00:00:00Z' },
      ]) {
        const res = await createKey(svc.app, s, body);
        expect([JSON.stringify(body), res.status, res.body.error?.code]).toEqual([
          JSON.stringify(body),
          400,
          'INVALID_REQUEST',
        ]);
      }
      for (let i = 0; i < 19; i++)
        expect((await createKey(svc.app, s, { name: `k${i}`, scope: 'payments' })).status).toBe(201);
      const over = await createKey(svc.app, s, { name: 'one too many', scope: 'payments' });
      expect(over.status).toBe(409);
      expect(over.body.error.code).toBe('CONFLICT');
      const [[{ n }]] = (await svc.db.query(`SELECT count(*)::int AS n FROM api_keys WHERE seller_id = :id`, {
        replacements: { id: s.id },
      })) as [Array<{ n: number }>, unknown];
      expect(n).toBe(20);
    },
  );

  it('an expired key answers 401 UNAUTHORIZED, even while it is cached', async () => {
    const created = await createKey(svc.app, seller, {
      name: 'short-lived',
      scope: 'payments',
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    expect(created.status).toBe(201);
    // bring its expiry close (the API refuses an expiry in the past), then use it so that it is cached
    await svc.db.query(`UPDATE api_keys SET expires_at = now() + interval '1.5 seconds' WHERE id = :id`, {
      replacements: { id: created.body.id },
    });
    expect(
      (await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(created.body.secret))).status,
    ).toBe(200);
    const expired = await within(
      5_000,
      async () =>
        (await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(created.body.secret))).status ===
        401,
    );
    expect(expired).toBe(true);
    const res = await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(created.body.secret));
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('lastUsedAt is set when a key is used', async () => {
    const created = await createKey(svc.app, seller, { name: 'used', scope: 'payments' });
    expect(
      (await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(created.body.secret))).status,
    ).toBe(200);
    const used = await within(2_000, async () => {
      const list = await request(svc.app).get(keysUrl(seller.id)).set(bearer(seller.apiKey));
      return typeof list.body.keys.find((k: { id: string }) => k.id === created.body.id)?.lastUsedAt === 'string';
    });
    expect(used).toBe(true);
  });
});

describe('key scopes: a payments key verifies, settles and reads its own payments, nothing else', () => {
  let payments: string;
  beforeAll(async () => {
    payments = (await createKey(svc.app, seller, { name: 'paywall', scope: 'payments' })).body.secret;
  });

  it('a payments key reads its own payments (200) but not another seller’s (403)', async () => {
    expect((await request(svc.app).get(`/v1/sellers/${seller.id}/payments`).set(bearer(payments))).status).toBe(200);
    expect((await request(svc.app).get('/v1/payments').set(bearer(payments))).status).toBe(200);
    const other = await signUpSeller(svc.app);
    expect((await request(svc.app).get(`/v1/sellers/${other.id}/payments`).set(bearer(payments))).status).toBe(403);
  });

  it('a payments key reaches verify and settle (their own answers, not 401/403)', async () => {
    for (const p of ['/v1/verify', '/v1/settle', '/x402/verify', '/x402/settle']) {
      const res = await request(svc.app).post(p).set(bearer(payments)).send({});
      expect([p, res.status]).toEqual([p, 400]);
    }
    expect((await request(svc.app).get('/x402/supported').set(bearer(payments))).status).toBe(200);
  });

  it(
    'a payments key may not create resources, manage keys, verify the domain, or call anything else (403 ' +
      'FORBIDDEN, nothing written)',
    async () => {
      const resourceCount = async () =>
        (
          await svc.db.query(`SELECT count(*)::int AS n FROM resources WHERE seller_id = :id`, {
            replacements: { id: seller.id },
          })
        )[0];
      const before = await resourceCount();
      const attempts: Array<[string, request.Test]> = [
        ['create resource', request(svc.app).post('/v1/resources').set(bearer(payments)).send(resourceInput(seller))],
        [
          'create key',
          request(svc.app).post(keysUrl(seller.id)).set(bearer(payments)).send({ name: 'escalate', scope: 'admin' }),
        ],
        ['list keys', request(svc.app).get(keysUrl(seller.id)).set(bearer(payments))],
        [
          'verify domain',
          request(svc.app).post(`/v1/sellers/${seller.id}/verify-domain`).set(bearer(payments)).send({}),
        ],
        ['search', request(svc.app).get('/v1/discovery/search?q=weather').set(bearer(payments))],
        [
          'mcp',
          request(svc.app)
            .post('/mcp')
            .set(bearer(payments))
            .set('Accept', 'application/json')
            .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        ],
      ];
      for (const [what, req] of attempts) {
        const res = await req;
        expect([what, res.status, res.body.error?.code]).toEqual([what, 403, 'FORBIDDEN']);
      }
      expect(await resourceCount()).toEqual(before);
    },
  );
});

describe('revocation reaches every server process within a second (PostgreSQL LISTEN/NOTIFY)', () => {
  let second: Service;
  beforeAll(async () => {
    second = await createService({
      databaseUrl: svc.databaseUrl,
      environment: 'test',
      version: '0.0.0-test',
      commit: null,
      networks: testNetworks(),
      operatorApiKey: OPERATOR_KEY,
      rateLimit: { points: 10_000, windowSeconds: 60 },
      bodyLimitBytes: 256 * 1024,
      responseValidation: true,
      logger: createLogger({ silent: !process.env.TEST_LOGS }),
    });
  });
  afterAll(async () => {
    await second?.close();
  });

  it(
    'a key revoked through one process answers 401 in the ' + 'other process, which had it cached, within 1 s',
    async () => {
      const created = await createKey(svc.app, seller, { name: 'leaked', scope: 'admin' });
      // both processes accept it (and so hold it in their caches)
      for (let i = 0; i < 3; i++) {
        expect((await request(second.app).get(keysUrl(seller.id)).set(bearer(created.body.secret))).status).toBe(200);
        expect((await request(svc.app).get(keysUrl(seller.id)).set(bearer(created.body.secret))).status).toBe(200);
      }
      const del = await request(svc.app)
        .delete(`${keysUrl(seller.id)}/${created.body.id}`)
        .set(bearer(seller.apiKey));
      expect(del.status).toBe(200);
      const refused = await within(
        1_000,
        async () => (await request(second.app).get(keysUrl(seller.id)).set(bearer(created.body.secret))).status === 401,
      );
      expect(refused).toBe(true);
    },
  );

  it(
    'a process that loses its listening connection stops trusting its cache: a revocation it could not hear ' +
      'still holds',
    async () => {
      const created = await createKey(svc.app, seller, { name: 'missed notification', scope: 'admin' });
      expect((await request(second.app).get(keysUrl(seller.id)).set(bearer(created.body.secret))).status).toBe(200);
      // cut every listening connection, then revoke behind the service's back (no notification at all)
      await svc.db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ` +
          `'paid-api-marketplace-key-changes' AND datname = current_database()`,
      );
      await svc.db.query(`UPDATE api_keys SET revoked_at = now() WHERE id = :id`, {
        replacements: { id: created.body.id },
      });
      const refused = await within(
        3_000,
        async () => (await request(second.app).get(keysUrl(seller.id)).set(bearer(created.body.secret))).status === 401,
      );
      expect(refused).toBe(true);
      // and the listener comes back: a later revocation is heard again
      const next = await createKey(svc.app, seller, { name: 'after reconnect', scope: 'admin' });
      expect(
        await within(5_000, async () => {
          const [[{ n }]] = (await svc.db.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ` +
              `'paid-api-marketplace-key-changes' AND datname = current_database()`,
          )) as [Array<{ n: number }>, unknown];
          return n >= 2;
        }),
      ).toBe(true);
      expect((await request(second.app).get(keysUrl(seller.id)).set(bearer(next.body.secret))).status).toBe(200);
      expect(
        (
          await request(svc.app)
            .delete(`${keysUrl(seller.id)}/${next.body.id}`)
            .set(bearer(seller.apiKey))
        ).status,
      ).toBe(200);
      expect(
        await within(
          1_000,
          async () => (await request(second.app).get(keysUrl(seller.id)).set(bearer(next.body.secret))).status === 401,
        ),
      ).toBe(true);
    },
  );
});

describe('operator key rotation without a restart', () => {
  const OLD = 'mk_op_rotation_old_key_0123456789abcdef';
  const NEW = 'mk_op_rotation_new_key_0123456789abcdef';
  let dir: string;
  let ring: OperatorKeyRing;
  let rotating: TestService;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'operator-keys-'));
    fs.writeFileSync(path.join(dir, 'operator-api-key'), `${OLD}\n`, { mode: 0o600 });
    ring = new OperatorKeyRing({ file: path.join(dir, 'operator-api-key') }).watch();
    rotating = await startTestService({ operatorKeys: ring.keys, operatorApiKey: null });
  });
  afterAll(async () => {
    ring.close();
    await rotating.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const asOperator = (key: string) => request(rotating.app).get('/v1/operations/dashboard').set(bearer(key));

  it(
    'adding the new key to the key file makes both work ' + '(overlap); removing the old one refuses it (401)',
    async () => {
      expect((await asOperator(OLD)).status).toBe(200);
      expect((await asOperator(NEW)).status).toBe(401);
      fs.writeFileSync(path.join(dir, 'operator-api-key'), `${OLD}\n${NEW}\n`);
      // the file watcher picks the change up (polling once a second)
      expect(await within(5_000, async () => (await asOperator(NEW)).status === 200)).toBe(true);
      expect((await asOperator(OLD)).status).toBe(200);
      fs.writeFileSync(path.join(dir, 'operator-api-key'), `${NEW}\n`);
      ring.reload(); // what SIGHUP does
      expect((await asOperator(OLD)).status).toBe(401);
      expect((await asOperator(NEW)).status).toBe(200);
    },
  );

  it('a key file emptied by mistake keeps the keys read before', async () => {
    fs.writeFileSync(path.join(dir, 'operator-api-key'), '\n');
    ring.reload();
    expect((await asOperator(NEW)).status).toBe(200);
  });

  it(
    'OPERATOR_API_KEY_PREVIOUS: the previous key is accepted ' + 'beside the current one; it needs OPERATOR_API_KEY',
    async () => {
      const config = loadConfig({ OPERATOR_API_KEY: NEW, OPERATOR_API_KEY_PREVIOUS: OLD });
      const fixed = new OperatorKeyRing({ fixed: [config.operatorApiKey ?? '', config.operatorApiKeyPrevious ?? ''] });
      const app = (await startTestService({ operatorKeys: fixed.keys, operatorApiKey: null })) as TestService;
      try {
        for (const key of [NEW, OLD])
          expect((await request(app.app).get('/v1/operations/dashboard').set(bearer(key))).status).toBe(200);
        expect((await request(app.app).get('/v1/operations/dashboard').set(bearer(OPERATOR_KEY))).status).toBe(401);
      } finally {
        await app.stop();
      }
      expect(() => loadConfig({ OPERATOR_API_KEY_PREVIOUS: OLD })).toThrow(
        /OPERATOR_API_KEY_PREVIOUS needs OPERATOR_API_KEY/,
      );
    },
  );
});
