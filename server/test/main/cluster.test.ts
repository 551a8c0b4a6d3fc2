// WEB_CONCURRENCY=2 (issue #14): main.ts runs as a node:cluster primary with two service processes on one port,
// against an external database and a network reached over RPC (the local network in the test process). The
// processes share the replay state through the database: the same signed payment sent to the port many times at
// once (spread over both processes by the primary) is verified exactly once. SIGTERM drains both and the primary
// exits 0.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { createTestDatabase } from '../support/database';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { fundedBuyer, paymentCase, sellerWithResource, type FacilitatorEnv } from '../facilitator/helpers';
import { remoteLocalNetwork, startMainProcess, type MainProcess } from '../reliability/support/main-process';
import { sellerWithResourceOverHttp } from '../reliability/support/over-http';

type Answer = { status: number; body: { paymentAttemptId?: string; error?: { code?: string } } };

function post(agent: http.Agent, url: string, body: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        timeout: 60_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') as Answer['body'] }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (err) => resolve({ status: 0, body: { error: { code: `client: ${err.message}` } } }));
    req.end(body);
  });
}

describe('WEB_CONCURRENCY=2: two service processes behind one port', () => {
  let database: { url: string; drop(): Promise<void> };
  let network: LocalNetwork;
  let main: MainProcess;
  const agent = new http.Agent({ keepAlive: false });

  beforeAll(async () => {
    database = await createTestDatabase();
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 500 });
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    main = await startMainProcess({
      databaseUrl: database.url,
      env: {
        WEB_CONCURRENCY: '2',
        LOCAL_NETWORK: 'false',
        STELLAR_TESTNET_RPC_URL: network.rpcUrl,
        STELLAR_TESTNET_ASSETS: `USDC:${usdc.issuer}`,
      },
    });
  }, 180_000);

  afterAll(async () => {
    agent.destroy();
    await main?.cleanup();
    await network?.stop();
    await database?.drop();
  });

  it(
    'both processes serve, and one signed payment sent 40 times ' + 'at once is verified once (39 REPLAY_DETECTED)',
    async () => {
      // each process logs "listening" once it serves
      for (let i = 0; i < 240 && main.logs().split('"msg":"listening"').length - 1 < 2; i++)
        await new Promise((r) => setTimeout(r, 250));
      expect(main.logs().split('"msg":"listening"').length - 1).toBe(2);
      expect(main.logs()).toContain('"msg":"service processes started"');

      const usdc = network.assets.find((a) => a.code === 'USDC')!;
      // The payTo must be a signed-up seller's wallet (nothing is verified for nobody accountable).
      const { payTo } = await sellerWithResourceOverHttp(main.baseUrl, network);
      const buyer = Keypair.random();
      await network.fundAccount(buyer.publicKey());
      await network.faucet(buyer.publicKey(), 'USDC', '5');
      const env = { network, usdc, svc: { app: main.baseUrl } } as unknown as FacilitatorEnv;
      const c = await paymentCase(env, buyer, payTo, '0.5');
      const body = JSON.stringify({ paymentPayload: c.payload, paymentRequirements: c.requirements });
      // a new connection per request: the primary hands connections to both processes
      const answers = await Promise.all(
        Array.from({ length: 40 }, () => post(agent, `${main.baseUrl}/v1/verify`, body)),
      );
      const tally = answers.reduce<Record<string, number>>((acc, a) => {
        const k = `${a.status} ${a.body.error?.code ?? 'ok'}`;
        acc[k] = (acc[k] ?? 0) + 1;
        return acc;
      }, {});
      expect(tally).toEqual({ '200 ok': 1, '409 REPLAY_DETECTED': 39 });
    },
    120_000,
  );

  it('SIGTERM stops both processes and the primary exits 0', async () => {
    main.child.kill('SIGTERM');
    const { code } = await main.exited;
    expect(code).toBe(0);
    expect(main.logs().split('"msg":"stopped"').length - 1).toBe(3); // two service processes, then the primary
  }, 60_000);
});

// Issue #31: WEB_CONCURRENCY works with nothing else configured, as `npm start` runs: the primary starts the embedded
// PostgreSQL and the local network, and the service processes connect to them (they used to be ignored: one process).
describe(
  'WEB_CONCURRENCY=2 with the embedded database and the local network: the primary owns them, the service ' +
    'processes connect',
  () => {
    let main: MainProcess;
    const agent = new http.Agent({ keepAlive: false });
    const count = (text: string) => main.logs().split(text).length - 1;

    beforeAll(async () => {
      // No DATABASE_URL, LOCAL_NETWORK on (its default), on a free port the primary hands to the service processes.
      main = await startMainProcess({
        env: { WEB_CONCURRENCY: '2', LOCAL_NETWORK_LEDGER_CLOSE_MS: '500', LOCAL_NETWORK_PORT: '0' },
      });
    }, 240_000);

    afterAll(async () => {
      agent.destroy();
      await main?.cleanup();
    });

    it(
      'two processes serve over one embedded database and one local network: one signed payment sent 20 times at ' +
        'once is verified once',
      async () => {
        for (let i = 0; i < 480 && count('"msg":"listening"') < 2; i++) await new Promise((r) => setTimeout(r, 250));
        expect(count('"msg":"listening"')).toBe(2);
        expect(count('"msg":"service processes started"')).toBe(1);
        expect(count('starting the embedded PostgreSQL')).toBe(1);
        expect(count('"msg":"local network started (evidence: local simulation)"')).toBe(1);

        const { env, refresh } = await remoteLocalNetwork(main.rpcUrl, main.baseUrl);
        const { seller } = await sellerWithResource(env, '0.5');
        const buyer = await fundedBuyer(env, '5');
        await refresh();
        const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
        const body = JSON.stringify({ paymentPayload: c.payload, paymentRequirements: c.requirements });
        // a new connection per request: the primary hands connections to both processes
        const answers = await Promise.all(
          Array.from({ length: 20 }, () => post(agent, `${main.baseUrl}/v1/verify`, body)),
        );
        const tally = answers.reduce<Record<string, number>>((acc, a) => {
          const k = `${a.status} ${a.body.error?.code ?? 'ok'}`;
          acc[k] = (acc[k] ?? 0) + 1;
          return acc;
        }, {});
        expect(tally).toEqual({ '200 ok': 1, '409 REPLAY_DETECTED': 19 });
      },
      180_000,
    );

    it(
      'SIGTERM stops both processes, then the local network and ' + 'the embedded database, and the primary exits 0',
      async () => {
        const postmasterPid = path.join(main.dataDir, 'postgres', 'postmaster.pid');
        expect(fs.existsSync(postmasterPid)).toBe(true);
        main.child.kill('SIGTERM');
        const { code } = await main.exited;
        expect(code).toBe(0);
        expect(count('"msg":"stopped"')).toBe(3); // two service processes, then the primary
        expect(fs.existsSync(postmasterPid)).toBe(false); // PostgreSQL shut down cleanly, not left running
        await expect(fetch(main.rpcUrl.replace(/\/rpc$/, '/'))).rejects.toThrow();
      },
      90_000,
    );
  },
);
