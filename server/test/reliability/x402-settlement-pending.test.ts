// x402 `settlement_pending` the standard way (issue #30; x402 spec v2, @x402/core >= 2.24 `settleWithPendingRetry`):
// when the ledger RPC stalls past a settlement's time bound, /x402/settle answers a non-terminal `success: false`,
// `errorReason: settlement_pending` carrying the submitted `transaction` and `network`; the stock resource server then
// settles the same payload once more, and that retry reconciles the transaction already submitted and gets the final
// answer. Two `server/src/main.ts` processes share one database; the local network runs in the test process behind an
// RPC front that can stall `getTransaction` (an RPC that hangs on the question "did it land?") and counts every
// `sendTransaction` (nothing may be broadcast twice). Scenarios: the retry lands on the other process; a replay races
// the retry; the process that answered pending is killed and a new process takes the retry.
import { Keypair } from '@stellar/stellar-sdk';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { createTestDatabase } from '../support/database';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { asTransactionXdr, paymentCase, type FacilitatorEnv } from '../facilitator/helpers';
import { toStroops } from '../../src/domain/amount';
import { startMainProcess, type MainProcess } from './support/main-process';
import { sellerWithResourceOverHttp } from './support/over-http';
import { startStallingRpc, type StallingRpc } from './support/stalling-rpc';
import type { SignedUpSeller } from '../support/fixtures';
import { loadConfig } from '../../src/config';

const CLIENT_BOUND_MS = 90_000; // @x402/core 2.27 HTTPFacilitatorClient's default timeout

interface SettleBody {
  success: boolean;
  errorReason?: string;
  transaction: string;
  network: string;
  payer?: string;
}

async function settle(baseUrl: string, body: unknown): Promise<{ status: number; body: SettleBody }> {
  const r = await fetch(`${baseUrl}/x402/settle`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CLIENT_BOUND_MS),
  });
  return { status: r.status, body: (await r.json()) as SettleBody };
}

/** @x402/core 2.27's rule (x402ResourceServer.settleWithPendingRetry): retry once, at once, when pending with a hash.
 * */
const retryable = (b: SettleBody) => !b.success && b.errorReason === 'settlement_pending' && !!b.transaction;

type Payload = Parameters<HTTPFacilitatorClient['settle']>[0];
type Requirements = Parameters<HTTPFacilitatorClient['settle']>[1];

/**
 * 2.27's `settleWithPendingRetry` over stock HTTPFacilitatorClients (the installed 2.9 client: the same HTTP call): one
 * settle, then exactly one retry of the identical payload when the answer is retryable, here through another process.
 */
async function stockSettleWithPendingRetry(
  first: HTTPFacilitatorClient,
  retry: HTTPFacilitatorClient,
  payload: Payload,
  requirements: Requirements,
) {
  const answer = await first.settle(payload, requirements);
  return { first: answer, final: retryable(answer as SettleBody) ? await retry.settle(payload, requirements) : answer };
}

describe(
  "x402 settlement_pending: the same payload's retry reconciles the submitted transaction (two processes, a " +
    'restart)',
  () => {
    let database: { url: string; drop(): Promise<void> };
    let network: LocalNetwork;
    let rpc: StallingRpc;
    let env: Record<string, string>;
    let seller: SignedUpSeller;
    const mains: MainProcess[] = [];
    let second: Promise<MainProcess> | undefined;
    let replacement: Promise<MainProcess> | undefined;

    beforeAll(async () => {
      database = await createTestDatabase();
      network = await startLocalNetwork({ port: 0, ledgerCloseMs: 200 });
      // "Did it land?" never answered while `rpc.state.stall` is on.
      rpc = await startStallingRpc(network.rpcUrl, 'getTransaction');
      const channels = Array.from({ length: 2 }, () => Keypair.random());
      for (const k of channels) await network.fundAccount(k.publicKey());
      const usdc = network.assets.find((a) => a.code === 'USDC')!;
      env = {
        LOCAL_NETWORK: 'false',
        STELLAR_TESTNET_RPC_URL: rpc.url,
        STELLAR_TESTNET_ASSETS: `USDC:${usdc.issuer}`,
        STELLAR_TESTNET_CHANNEL_SECRETS: channels.map((k) => k.secret()).join(','),
        LEDGER_CLOSE_MS: '200',
        // The shortest time bound: a stalled RPC makes settle answer settlement_pending once it plus the grace has
        // passed, at the end of the unanswered getTransaction then in flight (each ends at the RPC deadline).
        SETTLEMENT_TX_TIMEOUT_SECONDS: '5',
        // The shortest grace (default 10 s); a retry still asks the ledger once within it.
        SETTLEMENT_CONFIRM_GRACE_MS: '1000',
        // A stalled getTransaction ends after 3 s (default 8 s), so the second one ends past the time bound plus the
        // grace: each pending answer comes after ~6.4 s instead of one 8 s deadline (~8.3 s). Every other call here
        // answers in milliseconds.
        RPC_TIMEOUT_MS: '3000',
      };
      mains.push(await startMainProcess({ databaseUrl: database.url, env }));
      // The second process starts while the first scenario's settle waits on the stalled RPC (that wait uses no CPU;
      // a start is CPU-bound, so two starts at once would buy nothing): the scenario needs it only for the retry.
      second = startMainProcess({ databaseUrl: database.url, env }).then((m) => (mains.push(m), m));
      second.catch(() => undefined); // awaited by the first scenario; a failed start fails it there
      seller = (await sellerWithResourceOverHttp(mains[0].baseUrl, network)).seller;
    }, 180_000);

    afterAll(async () => {
      await second?.catch(() => undefined);
      const spare = await replacement?.catch(() => undefined);
      if (spare && !mains.includes(spare)) mains.push(spare); // the third scenario failed before taking it
      for (const m of mains) await m.cleanup();
      await rpc?.close();
      await network?.stop();
      await database?.drop();
    });

    /** A fresh funded buyer's x402 settle body for the seller's cataloged resource, 0.25 USDC. */
    async function x402Payment() {
      const usdc = network.assets.find((a) => a.code === 'USDC')!;
      const buyer = Keypair.random();
      await network.fundAccount(buyer.publicKey());
      await network.faucet(buyer.publicKey(), 'USDC', '1');
      const fenv = { network, usdc, svc: { app: mains[0].baseUrl } } as unknown as FacilitatorEnv;
      const c = await paymentCase(fenv, buyer, seller.wallet.publicKey(), '0.25', {
        sign: { expiration: network.latestLedger() + 600 },
      });
      const accepted = {
        scheme: 'exact',
        network: 'stellar:testnet',
        asset: usdc.contractId,
        amount: toStroops('0.25').toString(),
        payTo: seller.wallet.publicKey(),
        maxTimeoutSeconds: 300,
        extra: { areFeesSponsored: true },
      };
      const body = {
        x402Version: 2,
        paymentPayload: {
          x402Version: 2,
          resource: { url: `https://${seller.domain}/v1/forecast/porto` },
          accepted,
          payload: { transaction: asTransactionXdr(fenv, buyer, c.entry) },
        },
        paymentRequirements: accepted,
      };
      return { buyer, body };
    }

    /** The first settle on `base` while the RPC cannot say whether the transaction landed: settlement_pending. */
    async function pendingOn(base: string, body: unknown) {
      rpc.state.stall = true;
      const sentBefore = rpc.state.sent;
      const first = await settle(base, body);
      rpc.state.stall = false;
      return { first, sent: rpc.state.sent - sentBefore };
    }

    it(
      'answers settlement_pending (200, non-empty transaction and network); the stock retry on the other process ' +
        'gets success with the same transaction; a later replay is a duplicate; one broadcast, money moved once',
      async () => {
        const [a] = mains;
        const { buyer, body } = await x402Payment();
        rpc.state.stall = true;
        // The RPC comes back while the first settle still waits: its answer is already past the time bound and the
        // grace.
        const stockA = new HTTPFacilitatorClient({ url: `${a.baseUrl}/x402` });
        const firstSettle = stockA
          .settle(body.paymentPayload as unknown as Payload, body.paymentRequirements as unknown as Requirements)
          .then((answer) => {
            rpc.state.stall = false;
            return answer;
          });
        const b = await second!; // serving before the pending answer comes, on a quiet machine
        const stockB = new HTTPFacilitatorClient({ url: `${b.baseUrl}/x402` });
        const { first, final } = await stockSettleWithPendingRetry(
          { settle: () => firstSettle } as unknown as HTTPFacilitatorClient,
          stockB,
          body.paymentPayload as unknown as Payload,
          body.paymentRequirements as unknown as Requirements,
        );
        expect(first).toMatchObject({
          success: false,
          errorReason: 'settlement_pending',
          network: 'stellar:testnet',
          transaction: expect.stringMatching(/^[0-9a-f]{64}$/),
        });
        expect(final).toMatchObject({
          success: true,
          transaction: first.transaction,
          network: 'stellar:testnet',
          payer: buyer.publicKey(),
        });
        const raw = await settle(a.baseUrl, body);
        expect(raw.body).toMatchObject({ success: false, errorReason: 'duplicate_settlement', transaction: '' });
        expect(rpc.state.sent).toBe(1);
        expect(network.balance(buyer.publicKey(), 'USDC')).toBe('0.75');
      },
      240_000,
    );

    it(
      'a replay racing the retry (one to each process): exactly one final success, the other a duplicate; nothing ' +
        'broadcast again',
      async () => {
        const [a, b] = mains;
        const { buyer, body } = await x402Payment();
        const sentBefore = rpc.state.sent;
        const { first } = await pendingOn(b.baseUrl, body);
        // Over HTTP the pending answer is a 200 SettleResponse (a stock client parses any 2xx as an answer, not an
        // error).
        expect(first.status).toBe(200);
        expect(retryable(first.body)).toBe(true);
        const answers = await Promise.all([settle(a.baseUrl, body), settle(b.baseUrl, body)]);
        const successes = answers.filter((x) => x.body.success);
        expect(successes).toHaveLength(1);
        expect(successes[0].body.transaction).toBe(first.body.transaction);
        expect(answers.filter((x) => x.body.errorReason === 'duplicate_settlement')).toHaveLength(1);
        expect(rpc.state.sent - sentBefore).toBe(1);
        expect(network.balance(buyer.publicKey(), 'USDC')).toBe('0.75');
      },
      180_000,
    );

    it(
      'the process that answered settlement_pending is killed and a new one started: the retry on the new process ' +
        'gets the final answer, nothing broadcast again',
      async () => {
        const { buyer, body } = await x402Payment();
        const sentBefore = rpc.state.sent;
        // The new process starts while the settle waits on the stalled RPC (as a supervisor's replacement may), and
        // takes the retry only once the process that answered is dead: it knows the payment only from the database.
        const answered = pendingOn(mains[0].baseUrl, body);
        replacement = startMainProcess({ databaseUrl: database.url, env });
        const { first } = await answered;
        expect(retryable(first.body)).toBe(true);
        const killed = mains.shift()!;
        await killed.cleanup(); // SIGKILL
        const restarted = await replacement;
        mains.push(restarted);
        expect(killed.child.signalCode).toBe('SIGKILL');
        const retry = await settle(restarted.baseUrl, body);
        expect(retry.body).toMatchObject({ success: true, transaction: first.body.transaction });
        expect(rpc.state.sent - sentBefore).toBe(1);
        expect(network.balance(buyer.publicKey(), 'USDC')).toBe('0.75');
      },
      240_000,
    );
  },
);

describe('SETTLEMENT_CONFIRM_GRACE_MS: the confirmation grace past the time bound', () => {
  it('defaults to 10 s, reads milliseconds, and refuses a grace a retry could not ask the ledger within', () => {
    const local = { LOCAL_NETWORK: 'true' };
    expect(loadConfig(local).facilitator.confirmGraceMs).toBe(10_000);
    expect(loadConfig({ ...local, SETTLEMENT_CONFIRM_GRACE_MS: '2000' }).facilitator.confirmGraceMs).toBe(2000);
    for (const bad of ['0', '999', '300001', '2s'])
      expect(() => loadConfig({ ...local, SETTLEMENT_CONFIRM_GRACE_MS: bad })).toThrow(
        /SETTLEMENT_CONFIRM_GRACE_MS must be an integer from 1000 to 300000/,
      );
  });
});
