/**
 * Fees the pubnet way (issue #30), end to end on the local network told to reproduce pubnet's fee distribution
 * (getFeeStats' Soroban p10-p99 = 200 stroops, Soroban bids below 200 refused): a settle bids the getFeeStats p90
 * and the resource fee of its own settle-time simulation, lands within two ledgers, records both and the
 * attestation carries them. The caps refuse before anything is sent. Local simulation. Pure choices:
 * settlement-fees.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { QueryTypes } from 'sequelize';
import {
  fundedBuyer,
  metric,
  paymentCase,
  sellerWithResource,
  sendTransactions,
  sleep,
  startFacilitatorEnv,
  x402Body,
  type FacilitatorEnv,
} from './helpers';

const claimsOf = (jws: unknown) =>
  JSON.parse(Buffer.from(String(jws).split('.')[1], 'base64url').toString()) as Record<string, unknown>;

describe("fees the pubnet way, on the local network's pubnet fee profile", () => {
  let env: FacilitatorEnv;
  let proxy: http.Server;
  /** The latest ledger when each transaction was submitted (sendTransaction's answer), by hash. */
  const submittedAt = new Map<string, number>();

  beforeAll(async () => {
    // One-second ledgers: "within two ledgers" then means something. A forwarding hop in front of the RPC notes the
    // latest ledger each sendTransaction answer reports: the ledger the settle's transaction was submitted in.
    env = await startFacilitatorEnv({
      ledgerCloseMs: 1000,
      facilitator: { feeStatsTtlMs: 1500 },
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
            if (body.includes('"sendTransaction"')) {
              const { result } = JSON.parse(text) as { result?: { hash: string; latestLedger: number } };
              if (result) submittedAt.set(result.hash, result.latestLedger);
            }
            res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
          });
        });
        await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
        return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/rpc`;
      },
    });
    env.network.setFeeProfile('pubnet');
  });
  afterAll(async () => {
    await env.stop();
    proxy.closeAllConnections();
    await new Promise((r) => proxy.close(r));
  });

  it(
    'a settle bids the 200-stroop p90 and its simulated resource fee, lands within two ledgers, and the ' +
      'attestation carries both fees',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '3');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
      const res = await request(env.svc.app)
        .post('/x402/settle')
        .send(
          x402Body(
            env,
            buyer,
            c,
            { amount: '0.5', payTo: seller.wallet.publicKey() },
            resource.url.replace('{city}', 'oslo'),
          ),
        );
      expect({ success: res.body.success, reason: res.body.errorReason, message: res.body.errorMessage }).toEqual({
        success: true,
        reason: undefined,
        message: undefined,
      });
      const [row] = await env.svc.db.query<{
        ledger: number;
        inclusion: string;
        resource: string;
        percentile: string;
        maxFee: string;
      }>(
        `SELECT ledger, inclusion_fee_stroops AS inclusion, resource_fee_stroops AS resource, fee_percentile AS
        percentile, max_fee_stroops AS "maxFee"
         FROM settlements WHERE transaction_hash = :h`,
        { replacements: { h: res.body.transaction }, type: QueryTypes.SELECT },
      );
      // Submitted while ledger L was the latest, it is in L+1 or L+2.
      expect(row.ledger - submittedAt.get(res.body.transaction)!).toBeGreaterThanOrEqual(1);
      expect(row.ledger - submittedAt.get(res.body.transaction)!).toBeLessThanOrEqual(2);
      expect({ inclusion: row.inclusion, percentile: row.percentile }).toEqual({ inclusion: '200', percentile: 'p90' });
      expect(Number(row.resource)).toBeGreaterThan(0);
      // The transaction bid exactly these (one operation, no fee bump): its fee is inclusion + resource.
      expect(BigInt(row.maxFee)).toBe(200n + BigInt(row.resource));
      const claims = claimsOf(res.body.extensions.marketplace.attestation);
      expect(claims.fees).toEqual({ inclusion: '200', resource: row.resource, percentile: 'p90' });
    },
  );

  it(
    'concurrent settles share one getFeeStats answer: two ' + 'settles after the cache expired ask the RPC once',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyers = [await fundedBuyer(env, '3'), await fundedBuyer(env, '3')];
      const cases = await Promise.all(buyers.map((b) => paymentCase(env, b, seller.wallet.publicKey(), '0.5')));
      await sleep(1600); // past FACILITATOR_FEE_STATS_TTL_MS (1500 here)
      const asked = () => metric(env, 'ledger_rpc_requests_total', 'method="getFeeStats"');
      const before = await asked();
      const answers = await Promise.all(
        cases.map((c, i) =>
          request(env.svc.app)
            .post('/x402/settle')
            .send(
              x402Body(
                env,
                buyers[i],
                c,
                { amount: '0.5', payTo: seller.wallet.publicKey() },
                resource.url.replace('{city}', 'oslo'),
              ),
            ),
        ),
      );
      expect(answers.map((a) => a.body.success)).toEqual([true, true]);
      expect(await asked()).toBe(before + 1);
    },
  );
});

describe('fee caps refuse before anything is sent', () => {
  let env: FacilitatorEnv;

  beforeAll(async () => {
    // The local SAC transfer's resource fee is about 16,000 stroops: a 1,000-stroop cap refuses it.
    env = await startFacilitatorEnv({ facilitator: { maxResourceFeeStroops: 1_000 } });
  });
  afterAll(() => env.stop());

  it(
    'a resource fee above FACILITATOR_MAX_RESOURCE_FEE_STROOPS fails the settle naming the cap: no transaction ' +
      'sent, nothing moves',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '3');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
      const verified = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId: resource.id });
      expect(verified.status).toBe(200);
      const sends = await sendTransactions(env);
      const settled = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
      expect({ status: settled.status, code: settled.body.error?.code }).toMatchObject({ code: 'SETTLEMENT_FAILED' });
      expect(settled.body.error.message).toMatch(/FACILITATOR_MAX_RESOURCE_FEE_STROOPS \(1000\)/);
      expect(await sendTransactions(env)).toBe(sends);
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('3');
    },
  );
});
