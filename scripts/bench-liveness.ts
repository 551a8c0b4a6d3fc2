/**
 * npm run bench:liveness — the liveness worker's load at 100,000 listings (issue #33): probes per minute and CPU of
 * the service process, with the probe target a local HTTP server answering every host with a 402 (local
 * simulation). One listing is cataloged through the API and cloned in SQL into BENCH_LIVENESS_LISTINGS (100,000)
 * listings on BENCH_LIVENESS_HOSTS (1,000) hosts; then one pass of BENCH_LIVENESS_SECONDS (60) runs at
 * BENCH_LIVENESS_RATE probes per minute (20,000: every listing every 5 minutes) and prints what it did, the time of
 * the due-targets read at that size and the CPU the process used (user + system, over wall time).
 */
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startEmbeddedDatabase } from '../server/src/data/embedded-database';
import { tempDir } from './bench/processes';

const N = Number(process.env.BENCH_LIVENESS_LISTINGS ?? 100_000);
const HOSTS = Number(process.env.BENCH_LIVENESS_HOSTS ?? 1000);
const SECONDS = Number(process.env.BENCH_LIVENESS_SECONDS ?? 60);
const RATE = Number(process.env.BENCH_LIVENESS_RATE ?? 20_000);

async function main() {
  const pg = await startEmbeddedDatabase({
    dataDir: path.join(tempDir('bench-liveness-pg-'), 'data'),
    persistent: false,
  });
  process.env.TEST_ADMIN_DATABASE_URL = pg.adminUrl;
  const { startTestService } = await import('../server/test/support/test-service');
  const { signUpSeller, bearer, resourceInput } = await import('../server/test/support/fixtures');
  const { createSafeFetcher } = await import('../server/src/net');
  const { toStroops } = await import('../server/src/domain/amount');
  const { createTrustRepository } = await import('../server/src/data/trust-repository');

  let payTo = '';
  let issuer = '';
  let answered = 0;
  const sellerServer = http.createServer((_req, res) => {
    answered += 1;
    const body = JSON.stringify({
      x402Version: 2,
      accepts: [
        {
          scheme: 'exact',
          network: 'stellar:testnet',
          amount: toStroops('0.01').toString(),
          payTo,
          maxTimeoutSeconds: 300,
          extra: { asset: { code: 'USDC', issuer } },
        },
      ],
    });
    res.writeHead(402, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => sellerServer.listen(0, '127.0.0.1', () => r()));
  const port = (sellerServer.address() as AddressInfo).port;
  const svc = await startTestService({
    runJobs: true,
    jobPollMs: 100,
    responseValidation: false,
    challengeLimit: { perClient: 100_000, perWallet: 100 },
    statementTimeoutMs: 0, // the 100k-row clone
    trust: {
      liveness: false,
      settings: { maxPerMinute: RATE, concurrency: 32 },
      probeFetch: createSafeFetcher({
        allowInsecureForTests: true,
        allowPrivateAddressesForTests: true,
        readBodyOfStatuses: [200, 402],
        timeoutMs: 5000,
        lookup: async () => [{ address: '127.0.0.1', family: 4 }],
      }),
    },
  });
  try {
    const seller = await signUpSeller(svc.app, { domain: 'bench.example' });
    payTo = seller.wallet.publicKey();
    const input = resourceInput(seller, { amount: '0.01' });
    issuer = String(input.assetIssuer);
    const res = await request(svc.app)
      .post('/v1/resources')
      .set(bearer(seller.apiKey))
      .send({
        ...input,
        url: `http://h0.bench.example:${port}/v0/forecast/{city}`,
        routeTemplate: '/v0/forecast/{city}',
      });
    if (res.status !== 201) throw new Error(`create failed ${res.status}`);
    const seed = (res.body.resource ?? res.body).id as string;
    for (;;) {
      const [[row]] = (await svc.db.query(
        `SELECT count(*)::int AS n FROM search_documents WHERE resource_id = '${seed}'`,
      )) as [Array<{ n: number }>, unknown];
      if (row.n === 1) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const columns = async (table: string) =>
      (
        (
          await svc.db.query(
            `SELECT column_name AS c FROM information_schema.columns WHERE table_name = '${table}' AND ` +
              `is_generated = 'NEVER' ORDER BY ordinal_position`,
          )
        )[0] as Array<{ c: string }>
      ).map((r) => r.c);
    const clone = async (table: string, key: string) => {
      const cols = await columns(table);
      const sel = cols.map((c) =>
        c === key
          ? `'res_' || lpad(g::text, 26, '0') AS ${c}`
          : c === 'url'
            ? `'http://h' || (g % ${HOSTS}) || '.bench.example:${port}/v' || g || '/forecast/{city}' AS url`
            : c === 'route_template'
              ? `'/v' || g || '/forecast/{city}'`
              : c,
      );
      await svc.db.query(
        `INSERT INTO ${table} (${cols.join(', ')}) SELECT ${sel.join(', ')} FROM ${table}, generate_series(1, ` +
          `${N - 1}) AS g WHERE ${key} = '${seed}'`,
      );
    };
    let t = Date.now();
    await clone('resources', 'id');
    await clone('search_documents', 'resource_id');
    await svc.db.query('ANALYZE resources; ANALYZE search_documents');
    console.error(`cloned ${N} listings on ${HOSTS} hosts in ${Date.now() - t} ms`);

    const repo = createTrustRepository(svc.db);
    t = Date.now();
    const due = await repo.dueTargets(Math.ceil((RATE * SECONDS) / 60), new Date());
    const dueMs = Date.now() - t;

    const cpu0 = process.cpuUsage();
    t = Date.now();
    const result = await svc.trust.runner.pass(SECONDS * 1000);
    const wall = Date.now() - t;
    const cpu = process.cpuUsage(cpu0);
    const [[state]] = (await svc.db.query(
      'SELECT count(*)::int AS probed, count(*) FILTER (WHERE live)::int AS live FROM resource_liveness',
    )) as [Array<{ probed: number; live: number }>, unknown];
    t = Date.now();
    await repo.dueTargets(Math.ceil((RATE * SECONDS) / 60), new Date(Date.now() + 3600_000));
    const dueLaterMs = Date.now() - t;
    t = Date.now();
    await repo.refreshPriceOutliers(50, 5);
    const outlierMs = Date.now() - t;

    console.log(
      `listings ${N}, hosts ${HOSTS}, rate cap ${RATE}/min, pass budget ${Math.ceil((RATE * SECONDS) / 60)} ` +
        `probes (local simulation)`,
    );
    console.log(
      `pass: ${result.probed} probes (${result.live} live) in ${(wall / 1000).toFixed(1)} s = ` +
        `${Math.round((result.probed * 60_000) / wall)} probes/min; server answered ${answered}; ` +
        `resource_liveness rows ${state.probed}`,
    );
    console.log(
      `service process CPU during the pass: ${(((cpu.user + cpu.system) / 1000 / wall) * 100).toFixed(1)} % of ` +
        `one core (user ${Math.round(cpu.user / 1000)} ms, system ${Math.round(cpu.system / 1000)} ms)`,
    );
    console.log(
      `due-targets read of ${due.length}: ${dueMs} ms before the pass (all never probed), ${dueLaterMs} ms ` +
        `after; decoy-price refresh over ${N}: ${outlierMs} ms`,
    );
  } finally {
    await svc.stop();
    await pg.stop();
    await new Promise((r) => sellerServer.close(r));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
