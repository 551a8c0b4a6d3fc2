/**
 * Seeding of bench:search: sellers, resources, versions, indexed catalog events and the search documents the
 * indexing worker would build, straight into a migrated database in SQL (20k rows per batch), secondary indexes
 * dropped for the load and rebuilt after it. Shared by scripts/bench-search.ts and ad-hoc EXPLAIN sessions.
 */
import { Keypair } from '@stellar/stellar-sdk';
import { performance } from 'node:perf_hooks';
import { progress } from './processes';
import {
  baseScoreExpr,
  postingsSql,
  scoresVersion,
  signalsSql,
  staticScoreExpr,
} from '../../server/src/data/search-index-repository';

/** The part of BenchDatabase seeding needs (a pg client will do). */
export interface SeedDatabase {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

const SELLERS = 500;
const BATCH = 20_000;

const WORDS_A = [
  'weather',
  'forecast',
  'translate',
  'image',
  'stock',
  'crypto',
  'news',
  'geocode',
  'sentiment',
  'weather',
  'ocr',
  'speech',
  'flight',
  'hotel',
  'recipe',
  'sports',
  'currency',
  'email',
  'pdf',
  'video',
];
const WORDS_B = [
  'api',
  'lookup',
  'search',
  'service',
  'tool',
  'feed',
  'converter',
  'analyzer',
  'generator',
  'checker',
  'scanner',
  'index',
  'planner',
];
const WORDS_C = [
  'global',
  'city',
  'realtime',
  'historical',
  'premium',
  'fast',
  'bulk',
  'daily',
  'hourly',
  'mobile',
  'european',
  'asian',
];

const sqlArray = (a: string[]) => `(ARRAY[${a.map((w) => `'${w}'`).join(',')}])`;

/** Drops the secondary (non-constraint) indexes of `tables`, answering the statements that rebuild them. */
async function dropSecondaryIndexes(db: SeedDatabase, tables: string[]): Promise<string[]> {
  const rows = await db.query<{ name: string; def: string }>(
    `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
      WHERE i.schemaname = 'public' AND i.tablename = ANY($1)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = to_regclass('public.' ||
          quote_ident(i.indexname)))`,
    [tables],
  );
  for (const r of rows) await db.query(`DROP INDEX "${r.name}"`);
  return rows.map((r) => r.def);
}

export async function seedSearch(db: SeedDatabase, issuer: string, resources: number): Promise<void> {
  const wallets = Array.from({ length: SELLERS }, () => Keypair.random().publicKey());
  await db.query(
    `INSERT INTO sellers (id, display_name, wallet_address, domain, domain_verified_at)
     SELECT 'sel_' || lpad(i::text, 26, '0'), 'Bench seller ' || i, w, 'seller' || i || '.bench.example',
       CASE WHEN i % 2 = 0 THEN now() END
       FROM unnest($1::text[]) WITH ORDINALITY AS t(w, i)`,
    [wallets],
  );
  progress(`seeded ${SELLERS} sellers`);
  const [{ filterColumns }] = await db.query<{ filterColumns: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'search_postings'
                      AND column_name = 'amount') AS "filterColumns"`,
  );
  const rebuild = await dropSecondaryIndexes(db, [
    'resources',
    'resource_versions',
    'catalog_events',
    'search_documents',
    'search_postings',
  ]);
  // The postings' primary key too: built once by a sort after the load instead of ~25 random inserts per document.
  await db.query('ALTER TABLE search_postings DROP CONSTRAINT search_postings_pkey');
  rebuild.push('ALTER TABLE search_postings ADD PRIMARY KEY (resource_id, term)');
  progress(`dropped ${rebuild.length} secondary indexes and keys for the load (rebuilt after it)`);
  await db.query("SET maintenance_work_mem = '256MB'");
  await db.query('SET synchronous_commit = off');
  const t0 = performance.now();
  // Seconds spent in each statement of the load (printed with the progress), to see where seeding time goes.
  const spent = new Map<string, number>();
  const timed = async (name: string, sql: string, params?: unknown[]) => {
    const t = performance.now();
    await db.query(sql, params);
    spent.set(name, (spent.get(name) ?? 0) + (performance.now() - t) / 1000);
  };
  for (let start = 1; start <= resources; start += BATCH) {
    const end = Math.min(resources, start + BATCH - 1);
    await db.query('BEGIN');
    // Foreign keys are not checked row by row for the load (every row references rows inserted just before, in this
    // transaction, or the seeded sellers), nor do the search-sync triggers queue checks (nothing is paid): replica
    // mode skips the per-row checks, locks and triggers.
    await db.query('SET LOCAL session_replication_role = replica');
    await timed(
      'seed rows',
      `CREATE TEMP TABLE seed ON COMMIT DROP AS
       SELECT 'res_' || lpad(i::text, 26, '0') AS id, 'ver_' || lpad(i::text, 26, '0') AS ver, 'cev_' ||
         lpad(i::text, 26, '0') AS cev,
              s.id AS seller_id, s.wallet_address AS pay_to, s.domain, (s.domain_verified_at IS NOT NULL) AS verified,
              initcap(${sqlArray(WORDS_A)}[1 + i % ${WORDS_A.length}] || ' ' ||
                ${sqlArray(WORDS_B)}[1 + (i / 7) % ${WORDS_B.length}]) || ' ' || i AS name,
              ${sqlArray(WORDS_C)}[1 + (i / 3) % ${WORDS_C.length}] || ' ' || ${sqlArray(WORDS_A)}[1
                + (i / 11) % ${WORDS_A.length}]
                || ' data for buyers and agents, paid per call over x402 on Stellar' AS description,
              CASE WHEN i % 10 = 0 THEN 'mcp' ELSE 'http' END AS type,
              ((1 + i % 500)::numeric / 1000) AS amount,
              i
         FROM generate_series($1::int, $2::int) AS i
         JOIN sellers s ON s.id = 'sel_' || lpad((1 + i % ${SELLERS})::text, 26, '0')`,
      [start, end],
    );
    await timed(
      'resources',
      `INSERT INTO resources (id, seller_id, current_version_id, version, type, name, description, url,
        route_template, network,
                              pay_to, asset_code, asset_issuer, amount, input_schema, output_schema, extensions, status)
       SELECT id, seller_id, ver, 1, type, name, description,
              'https://' || domain || CASE WHEN type = 'mcp' THEN '/mcp/' || i ELSE '/v1/r' || i || '/{q}' END,
              CASE WHEN type = 'mcp' THEN '/mcp/' || i ELSE '/v1/r' || i || '/{q}' END,
              'stellar:testnet', pay_to, 'USDC', $1, amount,
              '{"type":"object","properties":{"q":{"type":"string","description":"query"}},"required":["q"]}',
              '{"type":"object","properties":{"result":{"type":"string"}}}',
              CASE WHEN type = 'mcp' THEN jsonb_build_object('mcp', jsonb_build_object('toolName',
                'tool_' || i)) ELSE '{"bazaar":{"info":{"input":{"type":"http","method":"GET"}}}}'::jsonb END,
              'active'
         FROM seed`,
      [issuer],
    );
    await timed(
      'versions',
      `INSERT INTO resource_versions (id, resource_id, version, name, description, url, route_template, network,
        pay_to, asset_code,
                                      asset_issuer, amount, input_schema, output_schema, extensions, seller_domain)
       SELECT s.ver, r.id, 1, r.name, r.description, r.url, r.route_template, r.network, r.pay_to,
         r.asset_code, r.asset_issuer,
              r.amount, r.input_schema, r.output_schema, r.extensions, s.domain
         FROM seed s JOIN resources r ON r.id = s.id`,
    );
    await timed(
      'events',
      `INSERT INTO catalog_events (id, resource_id, version_id, seller_id, kind, indexed_at) SELECT cev, id, ` +
        `ver, seller_id, 'cataloged', now() FROM seed`,
    );
    // The search documents as the indexing worker builds them, with static_score and base_score computed from
    // RANKING_WEIGHTS by the service's own expressions in the same statement (no second pass over the rows).
    await timed(
      'documents',
      `INSERT INTO search_documents (resource_id, seller_id, version_id, resource_version, type, name, description,
         url, route_template, network, pay_to, asset_code, asset_issuer, amount, status, extension_names,
         mcp_tool_name, discoverable, document, metadata_quality, schema_completeness, seller_verified, host_verified,
         settlement_success, uptime, live, price_drift, payout_changed, price_outlier, self_dealt, paid_payers,
         signals_refreshed_at, static_score, base_score)
       SELECT d.*, ${staticScoreExpr()}, ${baseScoreExpr()} FROM (
       SELECT r.id AS resource_id, r.seller_id, r.current_version_id AS version_id, 1 AS resource_version, r.type,
              r.name, r.description, r.url, r.route_template, r.network, r.pay_to, r.asset_code, r.asset_issuer,
              r.amount, 'active' AS status,
              CASE WHEN r.type = 'mcp' THEN ARRAY['mcp'] ELSE ARRAY['bazaar'] END AS extension_names,
              CASE WHEN r.type = 'mcp' THEN 'tool_' || s.i END AS mcp_tool_name, true AS discoverable,
              -- the indexing worker's layout (migration 0022): name A, tags/MCP tool name B, description C, schema
              -- text, route and URL host/path D
              setweight(to_tsvector('english', r.name), 'A')
                || setweight(to_tsvector('english', CASE WHEN r.type = 'mcp' THEN 'tool ' || s.i ELSE '' END), 'B')
                || setweight(to_tsvector('english', r.description), 'C')
                || setweight(to_tsvector('english', 'q query result ' || replace(r.route_template,
                  '/', ' ') || ' ' || regexp_replace(r.url, '[/.:{}]+', ' ', 'g')), 'D') AS document,
              0.5 + (s.i % 5) / 10.0 AS metadata_quality, 0.6 + (s.i % 4) / 10.0 AS schema_completeness,
              s.verified AS seller_verified,
              -- a verified seller's own domain is the URL's host: the host is proven (migration 0050), as the
              -- service's signal pass finds
              s.verified AS host_verified,
              -- settlement success, uptime, trust flags, usage: as the service computes them from these rows (no
              -- payments, no probes): neutral NULL / false / 0. The other signals vary: metadata quality, schema
              -- completeness, seller verification, price.
              CAST(NULL AS float8) AS settlement_success, CAST(NULL AS float8) AS uptime, CAST(NULL AS boolean) AS live,
              false AS price_drift, false AS payout_changed, false AS price_outlier, false AS self_dealt,
              CAST(0 AS float8) AS paid_payers, now() AS signals_refreshed_at
         FROM seed s JOIN resources r ON r.id = s.id) d`,
    );
    // The impact-ordered postings, ranked from the stored base_score as the indexing worker writes them (with the
    // filter columns when the schema has them: BENCH_SERVICE_TREE may be a tree before migration 0132).
    await timed('postings', postingsSql('d.resource_id IN (SELECT id FROM seed)', filterColumns));
    await db.query('COMMIT');
    const rate = end / ((performance.now() - t0) / 1000);
    progress(
      `seeded ${end}/${resources} resources (${rate.toFixed(0)} rows/s, ` +
        `~${((resources - end) / rate).toFixed(0)} s left; ` +
        [...spent].map(([k, v]) => `${k} ${v.toFixed(1)} s`).join(', ') +
        ')',
    );
  }
  for (const [i, def] of rebuild.entries()) {
    const t = performance.now();
    await db.query(def);
    progress(
      `rebuilt index ${i + 1}/${rebuild.length} in ${((performance.now() - t) / 1000).toFixed(1)} s: ` +
        `${def.replace(/ ON .*? USING /, ' … USING ').slice(0, 90)}`,
    );
  }
  await db.query('ANALYZE');
  progress('ANALYZE done');
  // The vocabulary (document frequencies, typo tolerance), as the search-sync worker's recount would leave it.
  const tv = performance.now();
  await db.query(
    `INSERT INTO search_vocabulary (word, ndoc) SELECT word, ndoc FROM ts_stat('SELECT document FROM
      search_documents WHERE discoverable')
      WHERE word ~ '[[:alpha:]]' AND length(word) <= 40
     ON CONFLICT (word) DO UPDATE SET ndoc = EXCLUDED.ndoc`,
  );
  await db.query('UPDATE search_vocabulary_state SET refreshed_at = now() WHERE id = 1');
  await db.query('ANALYZE search_vocabulary');
  progress(`vocabulary counted in ${((performance.now() - tv) / 1000).toFixed(1)} s`);
  // The search-sync state the seeded signals stand for: passed now, weights as ranking.ts has them, nothing queued
  // (the seed's own sellers and resources queued checks that find no payment). The service's rolling audit re-checks
  // SIGNAL_AUDIT documents per pass from their sources; here a sample is checked once, in a transaction rolled back.
  await db.query('DELETE FROM search_signal_dirty');
  await db.query(
    `INSERT INTO search_signal_sync (id, synced_at, aged_at, scores_version) VALUES (1, now(), now(), $1)
     ON CONFLICT (id) DO UPDATE SET synced_at = now(), aged_at = now(), scores_version = $1`,
    [scoresVersion()],
  );
  const SAMPLE = 'd2.resource_id IN (SELECT resource_id FROM search_documents TABLESAMPLE BERNOULLI (2) LIMIT 2000)';
  await db.query('BEGIN');
  const [check] = await db
    .query<{ n: number }>(
      `WITH u AS (${signalsSql(SAMPLE, true)}
       RETURNING 1) SELECT count(*)::int AS n FROM u`,
    )
    .catch(() => [{ n: -1 }]);
  await db.query('ROLLBACK');
  progress(`signals of a 2,000-document sample as the service computes them: ${check.n} differ from the seeded ones`);
}
