// Scale-out shape (issues #10 and #14): two `server/src/main.ts` processes, each its own Node process with its own
// connection pool and in-memory caches, share one PostgreSQL database, one configured channel pool and one local
// Stellar network (run in the test process, so it is the same ledger for both). 512 concurrent settles of ONE
// verified payment are split across the two processes: the database decides, so exactly one succeeds, one ledger
// transaction carries the payment and the balances move once. Afterwards both processes answer every read of that
// payment (attempt, settlement, receipt, resource) with the same body.
import http from 'node:http';
import { Keypair, TransactionBuilder, rpc } from '@stellar/stellar-sdk';
import { Client } from 'pg';
import { createTestDatabase } from '../support/database';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { bearer } from '../support/fixtures';
import { paymentCase, sleep, type FacilitatorEnv } from '../facilitator/helpers';
import { verifyAttestation } from '../../../sdk-buyer/src/receipts/attestation';
import type { JSONWebKeySet } from 'jose';
import { startMainProcess, type MainProcess } from './support/main-process';
import { postJson, sellerWithResourceOverHttp, stormTally, type Answer } from './support/over-http';

// Every request of the storm on its own connection at once: 256 sockets to each process (the agent's maxSockets).
// A larger storm adds only later waves, replays of a payment already claimed (1,000 before: two waves to each process).
const STORM = 512;
const OPERATOR = `op_key_two_processes_${Keypair.random().publicKey().slice(1, 16)}`;

async function getJson(url: string, key: string): Promise<{ status: number; body: unknown }> {
  const r = await fetch(url, { headers: bearer(key) });
  return { status: r.status, body: await r.json() };
}

describe('two server processes on one database (scale-out)', () => {
  let database: { url: string; drop(): Promise<void> };
  let network: LocalNetwork;
  let channels: Keypair[];
  const mains: MainProcess[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

  beforeAll(async () => {
    database = await createTestDatabase();
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 200 });
    channels = Array.from({ length: 2 }, () => Keypair.random());
    for (const k of channels) await network.fundAccount(k.publicKey());
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    const env = {
      LOCAL_NETWORK: 'false',
      STELLAR_TESTNET_RPC_URL: network.rpcUrl,
      STELLAR_TESTNET_ASSETS: `USDC:${usdc.issuer}`,
      // One configured pool for every process: the database lease table keeps them from sharing a channel.
      STELLAR_TESTNET_CHANNEL_SECRETS: channels.map((k) => k.secret()).join(','),
      OPERATOR_API_KEY: OPERATOR,
      // The network's pace (200 ms ledgers): verify converts maxTimeoutSeconds into ledgers with it.
      LEDGER_CLOSE_MS: '200',
    };
    // Started one after the other: the first one migrates the database.
    mains.push(await startMainProcess({ databaseUrl: database.url, env }));
    mains.push(await startMainProcess({ databaseUrl: database.url, env }));
  }, 180_000);

  afterAll(async () => {
    agent.destroy();
    for (const m of mains) await m.cleanup();
    await network?.stop();
    await database?.drop();
  });

  // Filled by the storm, checked by the tests after it.
  let answers: Answer[] = [];
  let ids: {
    attemptId: string;
    resourceId: string;
    sellerKey: string;
    transactionHash: string;
    receiptId: string;
  } | null = null;
  let ledgerTransactions: string[] = [];
  const balances = { buyerBefore: '', buyerAfter: '', sellerBefore: '', sellerAfter: '' };
  let rows = { settlements: -1, receipts: -1, attemptStatus: '' };

  it('sends 512 concurrent settles of one verified payment, alternating between the two processes', async () => {
    const [a, b] = mains;
    const usdc = network.assets.find((x) => x.code === 'USDC')!;
    const { seller, resourceId, payTo } = await sellerWithResourceOverHttp(b.baseUrl, network);

    const buyer = Keypair.random();
    await network.fundAccount(buyer.publicKey());
    await network.faucet(buyer.publicKey(), 'USDC', '10');
    const env = { network, usdc, svc: { app: a.baseUrl } } as unknown as FacilitatorEnv;
    const c = await paymentCase(env, buyer, payTo, '0.25', { sign: { expiration: network.latestLedger() + 120 } });
    const verified = await fetch(`${a.baseUrl}/v1/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ paymentPayload: c.payload, paymentRequirements: c.requirements }),
    });
    expect({ status: verified.status }).toEqual({ status: 200 });
    const attemptId = ((await verified.json()) as { paymentAttemptId: string }).paymentAttemptId;

    balances.buyerBefore = network.balance(buyer.publicKey(), 'USDC');
    balances.sellerBefore = network.balance(payTo, 'USDC');
    // The buyer's funding (friendbot, faucet) goes into the open ledger: close it, so that every transaction from
    // the next ledger on is the storm's.
    await network.closeLedger();
    const firstLedger = network.latestLedger() + 1;

    const body = JSON.stringify({ paymentAttemptId: attemptId, paymentPayload: c.payload, resourceId });
    answers = await Promise.all(
      Array.from({ length: STORM }, (_, i) => postJson(agent, `${(i % 2 ? b : a).baseUrl}/v1/settle`, body)),
    );

    // Wait (bounded) for the one settlement to be final, then read the database and the ledger.
    const admin = new Client({ connectionString: database.url });
    await admin.connect();
    try {
      for (let i = 0; i < 300; i++) {
        const r = await admin.query<{ status: string }>(
          `SELECT status FROM settlements WHERE payment_attempt_id = $1`,
          [attemptId],
        );
        if (r.rows[0] && r.rows[0].status !== 'pending') break;
        await sleep(100);
      }
      const counted = await admin.query<{
        settlements: number;
        receipts: number;
        status: string;
        hash: string | null;
        receipt: string | null;
      }>(
        `SELECT (SELECT count(*)::int FROM settlements WHERE payment_attempt_id = $1) AS settlements,
                (SELECT count(*)::int FROM receipts WHERE payment_attempt_id = $1) AS receipts,
                (SELECT status FROM payment_attempts WHERE id = $1) AS status,
                (SELECT transaction_hash FROM settlements WHERE payment_attempt_id = $1 LIMIT 1) AS hash,
                (SELECT id FROM receipts WHERE payment_attempt_id = $1 LIMIT 1) AS receipt`,
        [attemptId],
      );
      const row = counted.rows[0];
      rows = { settlements: row.settlements, receipts: row.receipts, attemptStatus: row.status };
      ids = {
        attemptId,
        resourceId,
        sellerKey: seller.apiKey,
        transactionHash: row.hash ?? '',
        receiptId: row.receipt ?? '',
      };
    } finally {
      await admin.end();
    }

    // Every transaction the ledger holds since the storm began, whoever submitted it (nothing else submits here).
    await network.closeLedger();
    const server = new rpc.Server(network.rpcUrl, { allowHttp: true });
    const txs = await server.getTransactions({ startLedger: firstLedger, pagination: { limit: 200 } });
    ledgerTransactions = txs.transactions.map((t) => {
      const envelope = TransactionBuilder.fromXDR(t.envelopeXdr, network.networkPassphrase);
      return 'source' in envelope ? envelope.source : envelope.innerTransaction.source;
    });
    balances.buyerAfter = network.balance(buyer.publicKey(), 'USDC');
    balances.sellerAfter = network.balance(payTo, 'USDC');
    expect(answers.length).toBe(STORM);
  }, 300_000);

  it(
    'exactly one settle succeeds; the 511 others answer 409 REPLAY_DETECTED (no 5xx, no timeout, no second ' +
      'success)',
    () => {
      expect(stormTally(answers)).toEqual({ successes: 1, replays: STORM - 1, others: {} });
    },
  );

  it(
    'money moved once: one ledger transaction from a pool channel, one settlement row, one receipt, balances ' +
      'moved by one payment',
    () => {
      expect(ledgerTransactions).toHaveLength(1);
      expect(channels.map((k) => k.publicKey())).toContain(ledgerTransactions[0]);
      expect(rows).toEqual({ settlements: 1, receipts: 1, attemptStatus: 'settled' });
      expect(balances).toEqual({
        buyerBefore: '10',
        buyerAfter: '9.75',
        sellerBefore: '0.0000001',
        sellerAfter: '0.2500001',
      });
    },
  );

  it(
    'the settlement is labelled local simulation: the configured "testnet" RPC identified itself as the local ' +
      'simulator',
    async () => {
      const { transactionHash, sellerKey } = ids!;
      const success = answers.find((r) => r.status === 200 || r.status === 202) as
        { body: { evidence?: string } } | undefined;
      expect(success?.body.evidence).toBe('local_simulation');
      for (const m of mains) {
        const read = await getJson(`${m.baseUrl}/v1/settlements/${transactionHash}`, sellerKey);
        expect((read.body as { evidence?: string }).evidence).toBe('local_simulation');
      }
    },
  );

  it(
    'both processes answer the reads of that payment with the same ' + 'facts (attempt, settlement, receipt, resource)',
    async () => {
      expect(ids).not.toBeNull();
      const { attemptId, resourceId, sellerKey, transactionHash, receiptId } = ids!;
      const paths = [
        `/v1/payments/${attemptId}`,
        `/v1/settlements/${transactionHash}`,
        `/v1/receipts/${receiptId}`,
        `/v1/resources/${resourceId}`,
      ];
      // Each process signs receipts with its own key (here: none was configured, so each generated one in its own
      // data folder); everything else must be identical.
      const withoutSignatures = (body: unknown) =>
        JSON.parse(JSON.stringify(body), (k, v) => (k === 'attestation' ? undefined : v)) as unknown;
      for (const p of paths) {
        for (const key of [sellerKey, OPERATOR]) {
          const [fromA, fromB] = await Promise.all(mains.map((m) => getJson(`${m.baseUrl}${p}`, key)));
          expect({ path: p, status: fromA.status }).toEqual({ path: p, status: 200 });
          expect({ path: p, body: withoutSignatures(fromB.body) }).toEqual({
            path: p,
            body: withoutSignatures(fromA.body),
          });
        }
      }
    },
  );

  it(
    "a settlement attestation signed by either process verifies against the other process's key set, and both " +
      'say the same',
    async () => {
      const { receiptId, sellerKey } = ids!;
      const signed = await Promise.all(
        mains.map(
          async (m) =>
            (await getJson(`${m.baseUrl}/v1/receipts/${receiptId}`, sellerKey)).body as { attestation?: string },
        ),
      );
      const jws = signed.map((b) => b.attestation ?? '');
      const jwks = await Promise.all(
        mains.map(async (m) => (await fetch(`${m.baseUrl}/.well-known/jwks.json`)).json() as Promise<JSONWebKeySet>),
      );
      const aByB = await verifyAttestation(jws[0], jwks[1]);
      const bByA = await verifyAttestation(jws[1], jwks[0]);
      expect({ aByB: aByB.valid, bByA: bByA.valid }).toEqual({ aByB: true, bByA: true });
      expect(aByB.valid && bByA.valid && aByB.payload).toEqual(bByA.valid && bByA.payload);
      // The answering process's own key comes first in its set.
      expect(jwks[0].keys[0].kid).not.toEqual(jwks[1].keys[0].kid);
    },
  );
});
