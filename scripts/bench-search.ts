/**
 * Search benchmark: `npm run bench:search`.
 *
 * Starts its own embedded PostgreSQL under a temporary data directory, migrates it, seeds 100k discoverable
 * resources directly in the database (bulk INSERT ... SELECT generate_series, in batches, with progress), starts
 * the real service over HTTP on a random port with the background workers running, then prints:
 *   - search latency p50/p95/p99 through HTTP (GET /v1/discovery/search, several queries, a few concurrent clients);
 *   - index freshness after a burst of catalog requests (POST /v1/discovery/catalog): the largest lag of the index
 *     behind the catalog observed while the indexing worker catches up, and the time until it has caught up.
 * Stops everything and removes the data directory by itself. Figures are local (2-core class machine).
 *
 * Env: BENCH_RESOURCES (default 100000), BENCH_SEARCHES (default 400), BENCH_CONCURRENCY (default 4),
 * BENCH_BURST (default 200).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import { startEmbeddedDatabase } from '../server/src/data/embedded-database';
import { migrate } from '../server/src/data/database';
import { createService } from '../server/src/compose';
import { NetworkRegistry } from '../server/src/ledger/network-registry';
import { DEFAULT_USDC_ISSUER, PUBNET_PASSPHRASE, TESTNET_PASSPHRASE } from '../server/src/config';
import { createLogger } from '../server/src/logger';

const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 100_000);
const SEARCHES = Number(process.env.BENCH_SEARCHES ?? 400);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const BURST = Number(process.env.BENCH_BURST ?? 200);
const SELLERS = 500;
const BATCH = 10_000;
const OPERATOR_KEY = 'mk_bench_operator_key_0123456789abcdef';

const WORDS_A = ['weather', 'forecast', 'translate', 'image', 'stock', 'crypto', 'news', 'geocode', 'sentiment', 'weather', 'ocr', 'speech', 'flight', 'hotel', 'recipe', 'sports', 'currency', 'email', 'pdf', 'video'];
const WORDS_B = ['api', 'lookup', 'search', 'service', 'tool', 'feed', 'converter', 'analyzer', 'generator', 'checker', 'scanner', 'index', 'planner'];
const WORDS_C = ['global', 'city', 'realtime', 'historical', 'premium', 'fast', 'bulk', 'daily', 'hourly', 'mobile', 'european', 'asian'];
const QUERIES = ['weather forecast', 'translate', 'crypto price', 'image generator', 'realtime stock feed', 'hourly weather city', 'pdf converter', 'speech', 'flight search', 'no such thing here'];

const sqlArray = (a: string[]) => `(ARRAY[${a.map((w) => `'${w}'`).join(',')}])`;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-search-'));
  const t0 = Date.now();
  console.log(`starting embedded PostgreSQL in ${dataDir}`);
  const pg = await startEmbeddedDatabase({ dataDir: path.join(dataDir, 'pg'), persistent: false });
  let service: Awaited<ReturnType<typeof createService>> | null = null;
  try {
    const url = await pg.urlFor('bench');
    await migrate(url);
    const networks = new NetworkRegistry([
      { network: 'stellar:testnet', passphrase: TESTNET_PASSPHRASE, rpcUrl: null, settlementEnabled: true, local: true, assets: [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:testnet'] }] },
      { network: 'stellar:pubnet', passphrase: PUBNET_PASSPHRASE, rpcUrl: null, settlementEnabled: false, assets: [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:pubnet'] }] },
    ]);
    service = await createService({
      databaseUrl: url,
      environment: 'bench',
      version: 'bench',
      commit: null,
      networks,
      operatorApiKey: OPERATOR_KEY,
      rateLimit: { points: 1_000_000, windowSeconds: 60 },
      bodyLimitBytes: 256 * 1024,
      responseValidation: false,
      logger: createLogger({ silent: true }),
      runJobs: true,
      jobPollMs: 100,
    });
    const db = service.db;

    // Sellers (real wallet keys), half of them with a verified domain.
    const wallets = Array.from({ length: SELLERS }, () => Keypair.random().publicKey());
    await db.query(
      `INSERT INTO sellers (id, display_name, wallet_address, domain, domain_verified_at)
       SELECT 'sel_' || lpad(i::text, 26, '0'), 'Bench seller ' || i, w, 'seller' || i || '.bench.example', CASE WHEN i % 2 = 0 THEN now() END
         FROM unnest(CAST(:wallets AS text[])) WITH ORDINALITY AS t(w, i)`,
      { replacements: { wallets: `{${wallets.join(',')}}` } },
    );
    console.log(`seeded ${SELLERS} sellers`);

    const issuer = DEFAULT_USDC_ISSUER['stellar:testnet'];
    for (let start = 1; start <= RESOURCES; start += BATCH) {
      const end = Math.min(RESOURCES, start + BATCH - 1);
      const tb = Date.now();
      await db.transaction(async (transaction) => {
        const q = (sql: string) => db.query(sql, { transaction, replacements: { start, end, issuer } });
        await q(`
          CREATE TEMP TABLE seed ON COMMIT DROP AS
          SELECT 'res_' || lpad(i::text, 26, '0') AS id, 'ver_' || lpad(i::text, 26, '0') AS ver, 'cev_' || lpad(i::text, 26, '0') AS cev,
                 s.id AS seller_id, s.wallet_address AS pay_to, s.domain, (s.domain_verified_at IS NOT NULL) AS verified,
                 initcap(${sqlArray(WORDS_A)}[1 + i % ${WORDS_A.length}] || ' ' || ${sqlArray(WORDS_B)}[1 + (i / 7) % ${WORDS_B.length}]) || ' ' || i AS name,
                 ${sqlArray(WORDS_C)}[1 + (i / 3) % ${WORDS_C.length}] || ' ' || ${sqlArray(WORDS_A)}[1 + (i / 11) % ${WORDS_A.length}]
                   || ' data for buyers and agents, paid per call over x402 on Stellar' AS description,
                 CASE WHEN i % 10 = 0 THEN 'mcp' ELSE 'http' END AS type,
                 ((1 + i % 500)::numeric / 1000) AS amount,
                 i
            FROM generate_series(:start, :end) AS i
            JOIN sellers s ON s.id = 'sel_' || lpad((1 + i % ${SELLERS})::text, 26, '0')`);
        await q(`
          INSERT INTO resources (id, seller_id, current_version_id, version, type, name, description, url, route_template, network,
                                 pay_to, asset_code, asset_issuer, amount, input_schema, output_schema, extensions, status)
          SELECT id, seller_id, ver, 1, type, name, description,
                 'https://' || domain || CASE WHEN type = 'mcp' THEN '/mcp/' || i ELSE '/v1/r' || i || '/{q}' END,
                 CASE WHEN type = 'mcp' THEN '/mcp/' || i ELSE '/v1/r' || i || '/{q}' END,
                 'stellar:testnet', pay_to, 'USDC', :issuer, amount,
                 '{"type":"object","properties":{"q":{"type":"string","description":"query"}},"required":["q"]}',
                 '{"type":"object","properties":{"result":{"type":"string"}}}',
                 CASE WHEN type = 'mcp' THEN jsonb_build_object('mcp', jsonb_build_object('toolName', 'tool_' || i)) ELSE '{"bazaar":{"info":{"input":{"type":"http","method":"GET"}}}}'::jsonb END,
                 'active'
            FROM seed`);
        await q(`
          INSERT INTO resource_versions (id, resource_id, version, name, description, url, route_template, network, pay_to, asset_code,
                                         asset_issuer, amount, input_schema, output_schema, extensions, seller_domain)
          SELECT s.ver, r.id, 1, r.name, r.description, r.url, r.route_template, r.network, r.pay_to, r.asset_code, r.asset_issuer,
                 r.amount, r.input_schema, r.output_schema, r.extensions, s.domain
            FROM seed s JOIN resources r ON r.id = s.id`);
        await q(`INSERT INTO catalog_events (id, resource_id, version_id, seller_id, kind, indexed_at) SELECT cev, id, ver, seller_id, 'cataloged', now() FROM seed`);
        // The search documents the indexing worker would build (same columns and weights), in bulk.
        await q(`
          INSERT INTO search_documents (resource_id, seller_id, version_id, resource_version, type, name, description, url, route_template,
                 network, pay_to, asset_code, asset_issuer, amount, status, extension_names, mcp_tool_name, discoverable, document,
                 metadata_quality, schema_completeness, seller_verified, settlement_success, signals_refreshed_at)
          SELECT r.id, r.seller_id, r.current_version_id, 1, r.type, r.name, r.description, r.url, r.route_template, r.network, r.pay_to,
                 r.asset_code, r.asset_issuer, r.amount, 'active',
                 CASE WHEN r.type = 'mcp' THEN ARRAY['mcp'] ELSE ARRAY['bazaar'] END,
                 CASE WHEN r.type = 'mcp' THEN 'tool_' || s.i END, true,
                 setweight(to_tsvector('english', r.name), 'A') || setweight(to_tsvector('english', r.description), 'B')
                   || setweight(to_tsvector('english', 'q query result ' || replace(r.route_template, '/', ' ')), 'C'),
                 0.5 + (s.i % 5) / 10.0, 0.6 + (s.i % 4) / 10.0, s.verified,
                 CASE WHEN s.i % 3 = 0 THEN (s.i % 100) / 100.0 END, now()
            FROM seed s JOIN resources r ON r.id = s.id`);
      });
      console.log(`seeded resources ${end}/${RESOURCES} (${Date.now() - tb} ms for this batch)`);
    }
    await db.query('ANALYZE');
    console.log(`seeding done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const srv = service.app.listen(0, '127.0.0.1');
    await new Promise((r) => srv.once('listening', r));
    const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;

    // Warm-up, then the measured searches.
    for (const q of QUERIES) await fetch(`${base}/v1/discovery/search?q=${encodeURIComponent(q)}`);
    const latencies: number[] = [];
    let results = 0;
    let next = 0;
    const client = async () => {
      while (next < SEARCHES) {
        const n = next++;
        const q = QUERIES[n % QUERIES.length];
        const filters = n % 4 === 1 ? '&type=http' : n % 4 === 2 ? '&maxPrice=0.25' : n % 4 === 3 ? '&limit=50' : '';
        const t = performance.now();
        const res = await fetch(`${base}/v1/discovery/search?q=${encodeURIComponent(q)}${filters}`);
        const body = (await res.json()) as { resources?: unknown[] };
        latencies.push(performance.now() - t);
        if (res.status !== 200) throw new Error(`search answered ${res.status}`);
        results += body.resources?.length ?? 0;
      }
    };
    const ts = Date.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, client));
    const wall = (Date.now() - ts) / 1000;
    latencies.sort((a, b) => a - b);
    console.log(`\nsearch over ${RESOURCES} resources, ${SEARCHES} requests, ${CONCURRENCY} concurrent clients, ${(SEARCHES / wall).toFixed(0)} req/s`);
    console.log(`  p50 ${pct(latencies, 50).toFixed(1)} ms   p95 ${pct(latencies, 95).toFixed(1)} ms   p99 ${pct(latencies, 99).toFixed(1)} ms   (avg ${(results / SEARCHES).toFixed(1)} results/page)`);
    const list: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t = performance.now();
      await fetch(`${base}/v1/discovery/resources?limit=20${i % 2 ? '&minPrice=0.1&maxPrice=0.2' : ''}`);
      list.push(performance.now() - t);
    }
    list.sort((a, b) => a - b);
    console.log(`listing (100 requests): p50 ${pct(list, 50).toFixed(1)} ms   p95 ${pct(list, 95).toFixed(1)} ms   p99 ${pct(list, 99).toFixed(1)} ms`);

    // Index freshness after a burst of catalog requests.
    const signup = await fetch(`${base}/v1/sellers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ displayName: 'Burst seller', walletAddress: Keypair.random().publicKey(), domain: 'burst.bench.example' }),
    });
    const seller = (await signup.json()) as { seller: { id: string; walletAddress: string }; apiKey: string };
    const tb = Date.now();
    let nextBurst = 0;
    const cataloger = async () => {
      while (nextBurst < BURST) {
        const n = nextBurst++;
        const res = await fetch(`${base}/v1/discovery/catalog`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${seller.apiKey}` },
          body: JSON.stringify({
            sellerId: seller.seller.id,
            resource: {
              type: 'http',
              name: `Burst weather ${n}`,
              description: 'Burst cataloged resource for the freshness benchmark',
              url: `https://burst.bench.example/v1/burst${n}/{city}`,
              routeTemplate: `/v1/burst${n}/{city}`,
              network: 'stellar:testnet',
              payTo: seller.seller.walletAddress,
              assetCode: 'USDC',
              assetIssuer: issuer,
              amount: '0.01',
              inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
              outputSchema: { type: 'object' },
            },
          }),
        });
        if (res.status !== 201) throw new Error(`catalog answered ${res.status}: ${await res.text()}`);
      }
    };
    await Promise.all(Array.from({ length: 8 }, cataloger));
    const burstSeconds = (Date.now() - tb) / 1000;
    let maxLag = 0;
    for (;;) {
      const [[row]] = (await db.query(
        'SELECT count(*)::int AS n, COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS lag FROM catalog_events WHERE indexed_at IS NULL',
      )) as [Array<{ n: number; lag: number }>, unknown];
      maxLag = Math.max(maxLag, row.lag);
      if (row.n === 0) break;
      if (Date.now() - tb > 300_000) throw new Error('index did not catch up within 5 minutes');
      await new Promise((r) => setTimeout(r, 100));
    }
    const caughtUp = (Date.now() - tb) / 1000;
    const check = (await (await fetch(`${base}/v1/discovery/search?q=burst&limit=100`)).json()) as { resources: unknown[]; partialResults: boolean };
    console.log(`\nindex freshness after a burst of ${BURST} catalog requests (8 concurrent; burst took ${burstSeconds.toFixed(2)} s):`);
    console.log(`  index caught up ${caughtUp.toFixed(2)} s after the burst started; largest observed lag ${maxLag.toFixed(2)} s; search then finds ${check.resources.length} burst resources, partialResults ${check.partialResults}`);
    await new Promise((r) => srv.close(() => r(undefined)));
  } finally {
    if (service) await service.close().catch(() => undefined);
    await pg.stop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
    console.log(`\ndone in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
