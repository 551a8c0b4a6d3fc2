// Graceful shutdown under load: main.ts in a child process (its own local network, ledgers closing every 2 s so a
// settle waits for its confirmation), SIGTERM while settles and many reads are in flight. Each in-flight request
// completes with its normal answer, a request on a new connection is not served once shutdown began, the process exits
// 0, and no
// Agenda job is left locked in the job store.
import http from 'node:http';
import { Client } from 'pg';
import type { Keypair } from '@stellar/stellar-sdk';
import { createTestDatabase } from '../support/database';
import { resourceInput } from '../support/fixtures';
import { fundedBuyer, paymentCase, sellerWithResource, type FacilitatorEnv } from '../facilitator/helpers';
import { remoteLocalNetwork, startMainProcess, type MainProcess } from './support/main-process';

/** One request on its own connection (no keep-alive pool), so "in flight" means a socket the server holds. */
function send(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  key?: string,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      `${baseUrl}${path}`,
      {
        method,
        agent: false,
        headers: {
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
          ...(key ? { authorization: `Bearer ${key}` } : {}),
        },
      },
      (res) => {
        answered = true;
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
          } catch {
            resolve({ status: res.statusCode ?? 0, body: text });
          }
        });
        res.on('error', (err) => reject(Object.assign(err, { truncated: true })));
      },
    );
    req.on('error', (err) => reject(Object.assign(err, { truncated: answered })));
    if (data) req.write(data);
    req.end();
  });
}

/**
 * A new connection after shutdown began: refused, or accepted by the kernel's backlog before the listening socket is
 * closed and then reset unanswered. Either way it is never served.
 */
function newConnectionOutcome(baseUrl: string): Promise<'not served' | 'served'> {
  return send(baseUrl, 'GET', '/health').then(
    () => 'served',
    () => 'not served',
  );
}

describe('graceful shutdown under load (main.ts, SIGTERM)', () => {
  let database: { url: string; drop(): Promise<void> };
  let main: MainProcess;

  beforeAll(async () => {
    database = await createTestDatabase();
    main = await startMainProcess({
      databaseUrl: database.url,
      env: { LOCAL_NETWORK_LEDGER_CLOSE_MS: '2000', FACILITATOR_CHANNEL_ACCOUNTS: '4' },
    });
  }, 150_000);
  afterAll(async () => {
    await main?.cleanup();
    await database?.drop();
  });

  it(
    'completes every in-flight settle and read, serves no new connection, exits 0, and leaves no Agenda job ' +
      'locked',
    async () => {
      const { env, refresh } = await remoteLocalNetwork(main.rpcUrl, main.baseUrl);
      const { seller, resource } = await sellerWithResource(env as FacilitatorEnv, '0.05');
      const buyer: Keypair = await fundedBuyer(env, '10');
      await refresh();
      // Verified payments, settled below while SIGTERM arrives.
      const payments = [];
      for (let i = 0; i < 4; i++) {
        const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.05');
        const v = await send(main.baseUrl, 'POST', '/v1/verify', {
          paymentPayload: c.payload,
          paymentRequirements: c.requirements,
        });
        expect(v.status).toBe(200);
        payments.push({ c, attemptId: (v.body as { paymentAttemptId: string }).paymentAttemptId });
      }
      // Catalog changes queue indexing jobs, so workers are busy too.
      for (let i = 0; i < 3; i++) {
        const r = await send(
          main.baseUrl,
          'POST',
          '/v1/resources',
          resourceInput(seller, { assetIssuer: env.usdc.issuer, name: `Extra ${i}` }),
          seller.apiKey,
        );
        expect(r.status).toBe(201);
      }

      let settlesAnswered = 0;
      const settles = payments.map((p) =>
        send(main.baseUrl, 'POST', '/v1/settle', {
          paymentAttemptId: p.attemptId,
          paymentPayload: p.c.payload,
          resourceId: resource.id,
        }).finally(() => (settlesAnswered += 1)),
      );
      // Reads: a read the server had not accepted yet when it closed its listener is reset before any answer
      // (the kernel's backlog, not a request in flight); a read the server took must be answered in full.
      const reads = Array.from({ length: 40 }, (_, i) =>
        (i % 2
          ? send(main.baseUrl, 'GET', `/v1/resources/${resource.id}`)
          : send(main.baseUrl, 'GET', '/v1/payments?limit=10', undefined, main.operatorKey)
        ).then(
          (r) => ({
            outcome: r.status === 200 ? 'served' : `status ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`,
          }),
          (err: Error & { truncated?: boolean }) => ({
            outcome: err.truncated ? `cut mid-answer: ${err.message}` : 'not accepted',
          }),
        ),
      );
      // The settles are in flight once the server has them: wait until each attempt is claimed (settlement_pending
      // or settled) in the database, then signal.
      const admin = new Client({ connectionString: database.url });
      await admin.connect();
      try {
        for (let i = 0; i < 200; i++) {
          const r = await admin.query(
            `SELECT count(*)::int AS n FROM payment_attempts WHERE id = ANY($1) AND status <> 'verified'`,
            [payments.map((p) => p.attemptId)],
          );
          if (r.rows[0].n > 0) break;
          await new Promise((res) => setTimeout(res, 25));
        }
        main.child.kill('SIGTERM');
        const inFlightAtSignal = payments.length - settlesAnswered;
        await main.waitForLog('"msg":"shutting down"');
        const newConnection = await newConnectionOutcome(main.baseUrl);

        const settled = await Promise.all(settles);
        const read = await Promise.all(reads);
        const exit = await main.exited;

        expect(inFlightAtSignal).toBeGreaterThan(0); // the signal did land while settles were waiting for their ledger
        expect(newConnection).toBe('not served');
        expect(settled.map((s) => [s.status, (s.body as { status?: string }).status])).toEqual(
          payments.map(() => [200, 'settled']),
        );
        expect(
          read.filter((r) => r.outcome !== 'served' && r.outcome !== 'not accepted').map((r) => r.outcome),
        ).toEqual([]);
        expect(read.some((r) => r.outcome === 'served')).toBe(true);
        expect(exit).toEqual({ code: 0, signal: null });
        expect(main.logs()).toContain('"msg":"stopped"');

        const locked = await admin.query(`SELECT name, locked_at FROM agenda_jobs WHERE locked_at IS NOT NULL`);
        expect(locked.rows).toEqual([]);
        const jobs = await admin.query(`SELECT count(*)::int AS n FROM agenda_jobs`);
        expect(jobs.rows[0].n).toBeGreaterThan(0); // the job store was in use, so "none locked" says something
        // Every settle that answered settled is settled in the database too.
        const rows = await admin.query(`SELECT status FROM payment_attempts WHERE id = ANY($1)`, [
          payments.map((p) => p.attemptId),
        ]);
        expect(rows.rows.map((r) => r.status)).toEqual(payments.map(() => 'settled'));
      } finally {
        await admin.end();
      }
    },
    180_000,
  );
});
