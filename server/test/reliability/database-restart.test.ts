// Database restart under load. The test starts its OWN embedded PostgreSQL (own data folder under .data/, a free
// port), runs the real service on it behind a real HTTP listener with the local Stellar network, keeps steady
// reads and verifies going, stops PostgreSQL and starts it again on the same port and data folder.
//
// Guarantees checked (no timing is asserted; the client timeout is only the bound for "never hangs"):
// - while the database is down, /health answers `down` with a reason that shows no internals, and requests answer
//   503 SERVICE_UNAVAILABLE in the envelope (never a 500, never a hang);
// - around the transitions every answer is a success or that 503;
// - after the database is back the same process serves again by itself;
// - no verified attempt is lost: each verify answered 200 is in the database as verified, and each verify refused
//   with 503 succeeds when the buyer retries it.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client } from 'pg';
import { startOwnDatabase, type OwnDatabase } from './support/embedded-db';
import { migrate } from '../../src/data/database';
import { createService, type Service } from '../../src/compose';
import { createLogger } from '../../src/logger';
import { startLocalNetwork } from '@paid-api-marketplace/local-network';
import { OPERATOR_KEY, testNetworks } from '../support/test-service';
import { bearer, resourceInput, signUpSeller } from '../support/fixtures';
import { fundedBuyer, paymentCase, sleep, type FacilitatorEnv, type PaymentCase } from '../facilitator/helpers';

const CLIENT_TIMEOUT_MS = 15_000;

interface Outcome {
  kind: 'read' | 'verify' | 'health';
  phase: 'up' | 'stopping' | 'down' | 'starting' | 'recovered';
  status: number | 'timeout' | 'network-error';
  code?: string;
  body?: unknown;
  retryAfter?: string | null;
}

describe('database restart under load', () => {
  const dataDir = path.resolve(
    __dirname,
    '../../../.data',
    `reliability-db-restart-${crypto.randomBytes(4).toString('hex')}`,
  );
  let pg: OwnDatabase;
  let port: number;
  let dbUrl: string;
  let env: FacilitatorEnv;
  let svc: Service;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    pg = await startOwnDatabase(dataDir);
    port = pg.port;
    dbUrl = await pg.urlFor('marketplace');
    await migrate(dbUrl);
    const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
    svc = await createService({
      databaseUrl: dbUrl,
      environment: 'test',
      version: '0.0.0-test',
      commit: null,
      networks: testNetworks({
        rpcUrl: network.rpcUrl,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      operatorApiKey: OPERATOR_KEY,
      rateLimit: { points: 1_000_000, windowSeconds: 60 },
      bodyLimitBytes: 256 * 1024,
      responseValidation: true,
      logger: createLogger({ silent: !process.env.TEST_LOGS }),
      facilitator: { channelAccounts: 2, pollMs: 25, confirmGraceMs: 10_000, ledgerSeconds: 0.1 },
    });
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    env = { network, svc: svc as FacilitatorEnv['svc'], usdc, stop: async () => undefined };
    server = await new Promise<Server>((resolve) => {
      const s = svc.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await new Promise<void>((resolve) => {
      server?.close(() => resolve());
      server?.closeAllConnections();
    });
    await svc?.close().catch(() => undefined);
    await env?.network.stop();
    await pg?.stop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function send(
    method: 'GET' | 'POST',
    url: string,
    body?: unknown,
  ): Promise<{ status: number | 'timeout' | 'network-error'; body?: unknown; retryAfter?: string | null }> {
    try {
      const res = await fetch(`${base}${url}`, {
        method,
        headers: { 'content-type': 'application/json', ...bearer(OPERATOR_KEY) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: kept as text, the envelope check below reports it
      }
      return { status: res.status, body: parsed, retryAfter: res.headers.get('retry-after') };
    } catch (err) {
      return { status: (err as Error).name === 'TimeoutError' ? 'timeout' : 'network-error', body: String(err) };
    }
  }

  // Filled by the scenario, checked by the tests after it.
  let port0 = 0;
  const outcomes: Outcome[] = [];
  const verified = new Map<string, PaymentCase>(); // attempt id -> payment
  const refusedVerifies: PaymentCase[] = [];
  let health: Awaited<ReturnType<typeof send>>;
  let healthy: Awaited<ReturnType<typeof send>>;
  let resourceId = '';

  it(
    'runs steady reads and verifies while PostgreSQL is ' + 'stopped and started again (same port, same data)',
    async () => {
      const seller = await signUpSeller(svc.app);
      await env.network.fundAccount(seller.wallet.publicKey());
      await env.network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
      const created = await send(
        'POST',
        '/v1/resources',
        resourceInput(seller, { assetIssuer: env.usdc.issuer, amount: '0.01' }),
      );
      expect(created.status).toBe(201);
      resourceId = (
        (created.body as { resource?: { id: string }; id?: string }).resource ?? (created.body as { id: string })
      ).id;
      const buyer = await fundedBuyer(env, '100');

      let phase: Outcome['phase'] = 'up';
      let running = true;
      const record = (
        kind: Outcome['kind'],
        at: Outcome['phase'],
        r: { status: Outcome['status']; body?: unknown; retryAfter?: string | null },
      ) => {
        const code = (r.body as { error?: { code?: string } })?.error?.code;
        outcomes.push({
          kind,
          phase: at === phase ? at : (`${at}->${phase}` as Outcome['phase']),
          status: r.status,
          code,
          body: r.body,
          retryAfter: r.retryAfter,
        });
      };
      const reader = async () => {
        while (running) {
          const at = phase;
          record('read', at, await send('GET', `/v1/resources/${resourceId}`));
          const at2 = phase;
          record('read', at2, await send('GET', '/v1/payments?limit=5'));
          await sleep(5);
        }
      };
      const verifier = async () => {
        while (running) {
          const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.01', {
            sign: { expiration: env.network.latestLedger() + 600 },
          });
          const at = phase;
          const r = await send('POST', '/v1/verify', {
            paymentPayload: c.payload,
            paymentRequirements: c.requirements,
          });
          record('verify', at, r);
          if (r.status === 200) verified.set((r.body as { paymentAttemptId: string }).paymentAttemptId, c);
          else refusedVerifies.push(c);
          await sleep(30);
        }
      };
      // Enough concurrent loops that some requests are mid-query when PostgreSQL stops (the case that used to answer
      // 500).
      const load = Promise.all([
        reader(),
        reader(),
        reader(),
        reader(),
        reader(),
        reader(),
        verifier(),
        verifier(),
        verifier(),
      ]);

      await sleep(1_000);
      phase = 'stopping';
      port0 = port;
      await pg.stop();
      phase = 'down';
      await sleep(1_500); // steady load against a stopped database
      health = await send('GET', '/health');
      await sleep(500);
      phase = 'starting';
      pg = await startOwnDatabase(dataDir, port);
      // Recovery by itself: the same process, no restart. The deadline only bounds the wait.
      const deadline = Date.now() + 60_000;
      healthy = await send('GET', '/health');
      while (!databaseOk(healthy.body) && Date.now() < deadline) {
        await sleep(200);
        healthy = await send('GET', '/health');
      }
      phase = 'recovered';
      await sleep(1_000);
      running = false;
      await load;
      expect(outcomes.length).toBeGreaterThan(20);
    },
    180_000,
  );

  it(
    'while the database is down, every request answers 503 SERVICE_UNAVAILABLE in the envelope with Retry-After ' +
      '(none hangs)',
    () => {
      const whileDown = outcomes.filter((o) => o.phase === 'down');
      expect(whileDown.length).toBeGreaterThan(0);
      expect(whileDown.filter((o) => !isEnveloped503(o)).map(show)).toEqual([]);
      expect(whileDown.filter((o) => !/^\d+$/.test(o.retryAfter ?? '')).map(show)).toEqual([]); // each says when to retry
    },
  );

  it(
    'requests in flight when the database stops or starts answer a success or 503 in the envelope: never a 500, ' +
      'never a hang',
    () => {
      const bad = outcomes.filter((o) => !(typeof o.status === 'number' && o.status < 300) && !isEnveloped503(o));
      expect(bad.map(show)).toEqual([]);
    },
  );

  it('/health answers down with a reason that shows no internals while the database is down', () => {
    expect({ status: health.status, body: health.body }).toMatchObject({
      status: 503,
      body: { status: 'down', checks: { database: { status: 'down' } } },
    });
    const h = health.body as { status: string; checks: { database: { status: string; message?: string } } };
    expect(h.checks.database.message ?? '').not.toBe('');
    const reason = JSON.stringify(h.checks.database);
    const leaked = ['ECONNREFUSED', '127.0.0.1', String(port0), 'postgres://', 'Sequelize', 'connect '].filter(
      (internal) => reason.includes(internal),
    );
    expect({ reason, leaked }).toEqual({ reason, leaked: [] });
  });

  it(
    'recovers by itself once the database is back: the database check of /health is ok again, and every later ' +
      'request served',
    () => {
      expect(healthy.status).toBe(200);
      expect(databaseOk(healthy.body)).toBe(true);
      const after = outcomes.filter((o) => o.phase === 'recovered');
      expect(after.length).toBeGreaterThan(0);
      expect(after.filter((o) => o.status !== 200 && o.status !== 201).map(show)).toEqual([]);
    },
  );

  it(
    'no verified attempt is lost: each 200 verify is stored as verified, each refused one succeeds on retry, and ' +
      'an attempt verified before the outage settles after it',
    async () => {
      expect(verified.size).toBeGreaterThan(0);
      const admin = new Client({ connectionString: dbUrl });
      await admin.connect();
      try {
        const rows = await admin.query<{ id: string; status: string }>(
          'SELECT id, status FROM payment_attempts WHERE id = ANY($1)',
          [[...verified.keys()]],
        );
        expect(rows.rows.length).toBe(verified.size);
        expect(rows.rows.filter((r) => r.status !== 'verified')).toEqual([]);
      } finally {
        await admin.end();
      }
      for (const c of refusedVerifies) {
        const r = await send('POST', '/v1/verify', { paymentPayload: c.payload, paymentRequirements: c.requirements });
        expect(r.status).toBe(200);
      }
      const [firstId, first] = [...verified.entries()][0];
      const settled = await send('POST', '/v1/settle', {
        paymentAttemptId: firstId,
        paymentPayload: first.payload,
        resourceId,
      });
      expect(settled.status).toBe(200);
      expect((settled.body as { status: string }).status).toBe('settled');
    },
    60_000,
  );
});

/** The database check of a /health body is ok (the ledger checks are another worker's business). */
function databaseOk(body: unknown): boolean {
  return (body as { checks?: { database?: { status?: string } } })?.checks?.database?.status === 'ok';
}

function isEnveloped503(o: Outcome): boolean {
  const b = o.body as {
    ok?: boolean;
    status?: string;
    error?: { code?: string; message?: string; requestId?: string };
  };
  if (o.kind === 'health') return o.status === 503 && b?.status === 'down';
  return (
    o.status === 503 &&
    b?.ok === false &&
    b.error?.code === 'SERVICE_UNAVAILABLE' &&
    typeof b.error.message === 'string' &&
    typeof b.error.requestId === 'string'
  );
}

function show(o: Outcome): string {
  return `${o.kind} while ${o.phase}: ${o.status} ${JSON.stringify(o.body).slice(0, 300)}`;
}
