// A crash made deterministic (issue #34 item 10): every channel leased (not yet pinned to a transaction) by a
// process that is then killed. A settle arriving on the restarted server must not use up the buyer's payment. The
// leases' lifetime is set by the test (long until the restarted server serves, then 10 s), never raced against a
// restart on a busy machine. main.ts runs in a child process, the local network in the test process
// (support/crash-fixture.ts, shared with crash-during-settlement.test.ts, the crashes at random points).
import { Keypair } from '@stellar/stellar-sdk';
import { Client } from 'pg';
import { paymentCase, sleep, type FacilitatorEnv } from '../facilitator/helpers';
import { sellerWithResourceOverHttp } from './support/over-http';
import { useCrashFixture } from './support/crash-fixture';
import { startStallingRpc } from './support/stalling-rpc';

describe('crash with every channel leased by the killed process', () => {
  const fixture = useCrashFixture();
  const { start } = fixture;

  it(
    'a settle arriving while every channel is leased by a killed process does not use up the payment: it is ' +
      'served once a channel frees, or answered 503 with Retry-After and the same settle succeeds later',
    async () => {
      const { network, database, usdc, channels } = fixture;
      // The file's four channels (fresh lease rows, free: no other test shares this database).
      const addresses = channels.map((k) => k.publicKey());
      // Settle reads its channel's sequence (getLedgerEntries) only after leasing it: stalling that holds the lease.
      const rpcFront = await startStallingRpc(network.rpcUrl, 'getLedgerEntries');
      const admin = new Client({ connectionString: database.url });
      await admin.connect();
      try {
        const attemptStatus = async (id: string) =>
          (await admin.query<{ status: string }>('SELECT status FROM payment_attempts WHERE id = $1', [id])).rows[0]
            ?.status;
        /** Channels of this test leased and not pinned to a transaction, with the lease not expired. */
        const liveLeases = async () =>
          (
            await admin.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM channel_leases WHERE address = ANY($1) AND holder IS NOT NULL AND ` +
                `leased_until > now() AND transaction_hash IS NULL`,
              [addresses],
            )
          ).rows[0].n;

        // The killed process's leases must still be live when the restarted one is asked (the precondition asserted
        // below), however loaded the machine and however long the restart takes: they live 600 s here (default 15 s),
        // and once the restarted process serves, the test sets their remaining lifetime (below) instead of racing it.
        let main = await start({ rpcUrl: rpcFront.url, leaseSeconds: 600 });
        const env = { network, usdc, svc: { app: main.baseUrl } } as unknown as FacilitatorEnv;
        const { resourceId, payTo } = await sellerWithResourceOverHttp(main.baseUrl, network);
        const pay = async (base: string) => {
          const buyer = Keypair.random();
          await network.fundAccount(buyer.publicKey());
          await network.faucet(buyer.publicKey(), 'USDC', '1');
          // 120 s at 100 ms ledgers: outlives the dead process's leases (10 s once set below) and the retries
          const c = await paymentCase(env, buyer, payTo, '0.25', {
            sign: { expiration: network.latestLedger() + 1200 },
          });
          const v = await fetch(`${base}/v1/verify`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ paymentPayload: c.payload, paymentRequirements: c.requirements }),
          });
          expect(v.status).toBe(200);
          const attemptId = ((await v.json()) as { paymentAttemptId: string }).paymentAttemptId;
          return {
            buyer,
            attemptId,
            body: JSON.stringify({ paymentAttemptId: attemptId, paymentPayload: c.payload, resourceId }),
          };
        };

        // One settle per channel, each stuck preparing its transaction (reading the channel account) while holding its
        // lease; then the process dies.
        const stuck = [];
        for (let i = 0; i < channels.length; i++) stuck.push(await pay(main.baseUrl));
        rpcFront.state.stall = true;
        for (const p of stuck) {
          void fetch(`${main.baseUrl}/v1/settle`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: p.body,
          }).then(
            (r) => r.text(),
            () => undefined,
          );
        }
        // a bound (30 s on a loaded machine), not an assertion
        for (let i = 0; i < 3000 && (await liveLeases()) < channels.length; i++) await sleep(10);
        main.child.kill('SIGKILL');
        await main.exited;
        rpcFront.state.stall = false;

        main = await start();
        const control = await pay(main.baseUrl);
        // The situation under test, established rather than raced: every channel is still leased by the dead process,
        // and its leases end 10 s from now (as if it had died 5 s before a default 15 s lease ran out), which one
        // settle request outlasts on any machine; the retries below wait for that expiry.
        const shortened = await admin.query(
          `UPDATE channel_leases SET leased_until = now() + interval '10 seconds' WHERE address = ANY($1) AND ` +
            `holder IS NOT NULL AND leased_until > now() AND transaction_hash IS NULL`,
          [addresses],
        );
        expect(shortened.rowCount).toBe(channels.length);
        expect(await liveLeases()).toBe(channels.length);
        const settle = () =>
          fetch(`${main.baseUrl}/v1/settle`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: control.body,
          });
        let res = await settle();
        const deadline = Date.now() + 120_000; // a bound on the retries, not a timing assertion
        while (res.status === 503 && Date.now() < deadline) {
          const body = (await res.json()) as { error?: { code?: string } };
          // Refused for want of a channel: in the envelope, with Retry-After, and the payment is not used up.
          expect({
            code: body.error?.code,
            retryAfter: Number(res.headers.get('retry-after')) > 0,
            attempt: await attemptStatus(control.attemptId),
          }).toEqual({
            code: 'SERVICE_UNAVAILABLE',
            retryAfter: true,
            attempt: 'verified',
          });
          await sleep(Number(res.headers.get('retry-after')) * 1000);
          res = await settle();
        }
        expect(res.status).toBe(200);
        expect(await attemptStatus(control.attemptId)).toBe('settled');
        expect(network.balance(control.buyer.publicKey(), 'USDC')).toBe('0.75');

        // The killed process's settles moved no money, and none is left pending (the cleanup worker fails the claims).
        for (let i = 0; i < 120; i++) {
          const states: Array<string | undefined> = [];
          for (const p of stuck) states.push(await attemptStatus(p.attemptId));
          if (states.every((st) => st === 'settlement_failed' || st === 'verified' || st === 'expired')) break;
          await sleep(500);
        }
        const outcome: Array<{ status: string | undefined; balance: string }> = [];
        for (const p of stuck)
          outcome.push({
            status: await attemptStatus(p.attemptId),
            balance: network.balance(p.buyer.publicKey(), 'USDC'),
          });
        expect(
          outcome.filter(
            (o) => o.balance !== '1' || !['settlement_failed', 'verified', 'expired'].includes(o.status ?? ''),
          ),
        ).toEqual([]);
        expect(network.balance(payTo, 'USDC')).toBe('0.2500001');
      } finally {
        await admin.end();
        await rpcFront.close();
      }
    },
    300_000,
  );
});
