import crypto from 'node:crypto';
import { toResource } from './resource-repository';
import { amountColumn } from './amount-column';
import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import type { IndexOutcome, IndexSnapshot, SearchDocument, SearchIndexRepository } from '../domain/discovery/indexing';
import type { RankingWeights } from '../domain/discovery/types';
import { FIELD_WEIGHTS, PROVEN_HOST_TIER, RANKING_WEIGHTS } from '../domain/discovery/ranking';

type Row = Record<string, unknown>;

export type { SearchIndexRepository };

/** A payer counts fully in the usage signal once it paid this much (in the asset's units) at the cataloged price. */
export const PAYER_UNIT = '0.01';

/**
 * Recomputes the ranking signals of the documents `where` selects (over `d2`) from their sources (sellers, payments,
 * probes, host ownership). `onlyChanged`: rewrite only the documents whose signals differ (a sync pass); else every
 * selected document (it was just indexed). Answers through the UPDATE's row count.
 */
export function signalsSql(where: string, onlyChanged: boolean): string {
  return `
  UPDATE search_documents d SET
    seller_verified = st.verified,
    settlement_success = st.rate,
    settlement_count = st.settled,
    unique_payers = st.payers,
    paid_payers = st.paid_payers,
    host_verified = st.host_verified,
    host_claimed = st.host_claimed,
    last_payment_at = st.last_paid,
    uptime = st.uptime, -- share of passed 402 probes over 7 days (conformance runner); NULL, neutral, before the first
    self_dealt = st.self_dealt,
    signals_refreshed_at = now()
  FROM (
    SELECT d2.resource_id,
           EXISTS (SELECT 1 FROM sellers s WHERE s.id = d2.seller_id AND s.domain_verified_at IS NOT NULL) AS verified,
           (SELECT CASE WHEN count(*) > 0 THEN (count(*) FILTER (WHERE p.status = 'settled'))::float8 / count(*) END
              FROM payment_attempts p
             WHERE p.resource_id = d2.resource_id AND p.status IN ('settled', 'settlement_failed')
               -- the payer's failure is not the payee's (issue #29)
               AND p.failure_code IS DISTINCT FROM 'INSUFFICIENT_BALANCE'
               AND p.created_at > now() - interval '30 days') AS rate,
           (SELECT count(*) FROM payment_attempts p
             WHERE p.resource_id = d2.resource_id AND p.status = 'settled' AND p.created_at > now() -
               interval '30 days')::int AS settled,
           u.payers, u.paid_payers,
           -- issue #33: most of the last 30 days' settled calls (at least 3) came from wallets the seller controls
           (sd.self_calls >= 3 AND 2 * sd.self_calls > sd.calls) AS self_dealt,
           (h.owner IS NOT DISTINCT FROM d2.seller_id) AS host_verified,
           (h.owner IS NOT NULL AND h.owner <> d2.seller_id) AS host_claimed,
           (SELECT max(p.updated_at) FROM payment_attempts p WHERE p.resource_id = d2.resource_id AND
             p.status = 'settled') AS last_paid,
           -- uptime: the liveness worker's 7 days (issue #33) when it has probed the resource, else
           -- the conformance runner's
           COALESCE((SELECT sum(y.passed)::float8 / NULLIF(sum(y.probes), 0) FROM resource_liveness_days y
                      WHERE y.resource_id = d2.resource_id AND y.day > CAST(now() AS date) - 7),
                    (SELECT avg(CASE WHEN pr.passed THEN 1.0 ELSE 0.0 END)::float8 FROM resource_probes pr
                      WHERE pr.resource_id = d2.resource_id AND pr.checked_at > now() - interval '7 days')) AS uptime
      FROM search_documents d2
      -- the seller that proved the URL's host (migration 0050): its own (host_verified), another (host_claimed), none
      CROSS JOIN LATERAL (SELECT host_owner(url_host(d2.url)) AS owner) h
      -- usage: payers whose settled payment paid at least the cataloged price (same network and asset, not the payTo
      -- itself), each weighted by what it paid at that price over PAYER_UNIT (0.01 of the asset), at most 1
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS payers, COALESCE(sum(LEAST(1.0, q.at_price / ${PAYER_UNIT})), 0)::float8 AS paid_payers
          FROM (SELECT p.payer, count(*) * d2.amount AS at_price FROM payment_attempts p
                 WHERE p.resource_id = d2.resource_id AND p.status = 'settled' AND p.updated_at >
                   now() - interval '30 days'
                   AND p.amount >= d2.amount AND p.network = d2.network AND p.asset_code = d2.asset_code
                   AND p.asset_issuer = d2.asset_issuer AND p.payer <> d2.pay_to
                   -- self-dealing (issue #33) counts nothing: the payer is the seller's own wallet or the payTo of
                   -- another of its listings (controlled together), or the payee paid the payer through us
                   -- (payee-funded payers, circular flows)
                   AND p.payer NOT IN (SELECT s3.wallet_address FROM sellers s3 WHERE s3.id = d2.seller_id)
                   AND NOT EXISTS (SELECT 1 FROM resources r3 WHERE r3.seller_id = d2.seller_id AND r3.pay_to = p.payer)
                   AND NOT EXISTS (SELECT 1 FROM payment_attempts f WHERE f.status = 'settled'
                     AND f.payer = d2.pay_to AND f.pay_to = p.payer)
                 GROUP BY p.payer) q) u
      CROSS JOIN LATERAL (
        SELECT count(*)::int AS calls,
               count(*) FILTER (WHERE p.payer = d2.pay_to
                 OR p.payer IN (SELECT s3.wallet_address FROM sellers s3 WHERE s3.id = d2.seller_id)
                 OR EXISTS (SELECT 1 FROM resources r3 WHERE r3.seller_id = d2.seller_id AND r3.pay_to = p.payer)
                 OR EXISTS (SELECT 1 FROM payment_attempts f WHERE f.status = 'settled' AND
                   f.payer = d2.pay_to AND f.pay_to = p.payer))::int AS self_calls
          FROM payment_attempts p
         WHERE p.resource_id = d2.resource_id AND p.status = 'settled' AND p.updated_at > now() - interval '30 days') sd
      WHERE ${where}
  ) st
  WHERE st.resource_id = d.resource_id
    -- a sync pass rewrites only documents whose signals changed (one resource: always, it was just indexed)
    ${onlyChanged ? CHANGED : ''}`;
}

const CHANGED = `AND (d.signals_refreshed_at IS NULL OR d.uptime IS DISTINCT FROM st.uptime
         OR d.seller_verified IS DISTINCT FROM st.verified
         OR d.settlement_success IS DISTINCT FROM st.rate
         OR d.settlement_count IS DISTINCT FROM st.settled
         OR d.unique_payers IS DISTINCT FROM st.payers
         OR d.paid_payers IS DISTINCT FROM st.paid_payers
         OR d.host_verified IS DISTINCT FROM st.host_verified
         OR d.host_claimed IS DISTINCT FROM st.host_claimed
         OR d.last_payment_at IS DISTINCT FROM st.last_paid
         OR d.self_dealt IS DISTINCT FROM st.self_dealt)`;

/** The batch's snapshot: one row per requested id (resource columns named as toResource reads them). */
const SNAPSHOT_SQL = `
  SELECT ids.k AS "requestedId",
         (SELECT max(e.id) FROM catalog_events e WHERE e.resource_id = ids.k AND e.indexed_at IS NULL) AS "maxEvent",
         r.id, r.seller_id AS "sellerId", r.current_version_id AS "currentVersionId", r.version, r.type,
           r.name, r.description,
         r.url, r.route_template AS "routeTemplate", r.network, r.pay_to AS "payTo", r.asset_code AS "assetCode",
         r.asset_issuer AS "assetIssuer", r.amount::text AS amount, r.input_schema AS "inputSchema",
           r.output_schema AS "outputSchema",
         r.extensions, r.status, r.created_at AS "createdAt", r.updated_at AS "updatedAt",
         s.id AS "sId", s.wallet_address AS "sWallet", s.domain AS "sDomain", s.domain_verified_at AS "sVerifiedAt",
         cd.seller_id AS "dSellerId", cd.declared_pay_to AS "dPayTo", cd.trusted AS "dTrusted",
         (SELECT o.id FROM sellers o WHERE o.wallet_address = r.pay_to LIMIT 1) AS "payToOwner",
         (s.id IS NOT NULL AND EXISTS (SELECT 1 FROM sellers x WHERE x.domain = s.domain AND x.id <> s.id
           AND x.domain_verified_at IS NOT NULL)) AS "domainVerifiedByOther",
         t.id AS "toolOwnerId", t.seller_id AS "toolOwnerSellerId",
         host_owner(url_host(r.url)) AS "hostOwner"
    FROM unnest(CAST($1 AS text[])) AS ids(k)
    LEFT JOIN resources r ON r.id = ids.k
    LEFT JOIN sellers s ON s.id = r.seller_id
    LEFT JOIN catalog_declarations cd ON cd.resource_id = r.id
    LEFT JOIN LATERAL (
      SELECT o.id, o.seller_id FROM resources o
       WHERE r.type = 'mcp' AND o.type = 'mcp' AND o.status = 'active' AND o.url = r.url AND o.id <> r.id
         AND COALESCE(o.extensions->'mcp'->>'toolName', o.extensions->'mcp'->>'tool') =
           COALESCE(r.extensions->'mcp'->>'toolName', r.extensions->'mcp'->>'tool')
       ORDER BY o.id LIMIT 1) t ON true`;

/** Every document of the batch in one statement, from a JSON array of SearchDocument. */
const UPSERT_SQL = `
  INSERT INTO search_documents (resource_id, seller_id, version_id, resource_version, type, name, description, url,
     route_template, network, pay_to, asset_code, asset_issuer, amount, status, extension_names, mcp_tool_name,
     discoverable, rejection_reasons, document, metadata_quality, schema_completeness, seller_verified, indexed_at)
  SELECT j."resourceId", j."sellerId", j."versionId", j.version, j.type, j.name, j.description, j.url,
    j."routeTemplate",
     j.network, j."payTo", j."assetCode", j."assetIssuer", CAST(j.amount AS numeric), j.status,
     ARRAY(SELECT jsonb_array_elements_text(j."extensionNames")), j."mcpToolName", j.discoverable, j."rejectionReasons",
     setweight(to_tsvector('english', j.name), 'A') || setweight(to_tsvector('english',
       COALESCE(j."tagsText", '')), 'B')
       || setweight(to_tsvector('english', j.description), 'C') || setweight(to_tsvector('english',
         j."schemaText"), 'D'),
     j."metadataQuality", j."schemaCompleteness", j."sellerVerified", now()
    FROM jsonb_to_recordset(CAST($1 AS jsonb)) AS j("resourceId" text, "sellerId" text, "versionId" text,
      version integer, type text,
       name text, description text, url text, "routeTemplate" text, network text, "payTo" text, "assetCode" text,
       "assetIssuer" text, amount text, status text, "extensionNames" jsonb, "mcpToolName" text, discoverable boolean,
       "rejectionReasons" jsonb, "tagsText" text, "schemaText" text, "metadataQuality" double precision,
         "schemaCompleteness" double precision,
       "sellerVerified" boolean)
  ON CONFLICT (resource_id) DO UPDATE SET
     seller_id = EXCLUDED.seller_id, version_id = EXCLUDED.version_id, resource_version = EXCLUDED.resource_version,
     type = EXCLUDED.type, name = EXCLUDED.name, description = EXCLUDED.description, url = EXCLUDED.url,
     route_template = EXCLUDED.route_template, network = EXCLUDED.network, pay_to = EXCLUDED.pay_to,
     asset_code = EXCLUDED.asset_code, asset_issuer = EXCLUDED.asset_issuer, amount = EXCLUDED.amount,
     status = EXCLUDED.status, extension_names = EXCLUDED.extension_names, mcp_tool_name = EXCLUDED.mcp_tool_name,
     discoverable = EXCLUDED.discoverable, rejection_reasons = EXCLUDED.rejection_reasons, document = EXCLUDED.document,
     metadata_quality = EXCLUDED.metadata_quality, schema_completeness = EXCLUDED.schema_completeness,
     seller_verified = EXCLUDED.seller_verified, indexed_at = now()`;

/** The signals of the documents of one indexing batch (always rewritten: they were just indexed). */
const SIGNALS_BATCH_SQL = signalsSql('d2.resource_id = ANY(CAST($1 AS text[]))', false);
/** The signals of one batch of a sync pass: only the documents whose signals changed are rewritten. */
const SIGNALS_CHANGED_SQL = signalsSql('d2.resource_id = ANY(CAST($1 AS text[]))', true);

/** A number of RANKING_WEIGHTS as an SQL float8 literal (the weights are code, never user input). */
const w = (n: number) => {
  if (!Number.isFinite(n)) throw new Error(`ranking weight ${n} is not a finite number`);
  return `CAST(${n} AS float8)`;
};

/**
 * The query-independent scores of a document `d`, from RANKING_WEIGHTS (domain/discovery/ranking.ts, the one place
 * the weights live): static_score, the nine weighted signals (a missing uptime or settlement success is neutral 0.5),
 * and base_score = static_score + usage + the proven-host tier, all a result's score that does not depend on the query.
 */
export function staticScoreExpr(W: RankingWeights = RANKING_WEIGHTS): string {
  return `CAST(${w(W.metadataQuality)} * d.metadata_quality + ${w(W.schemaCompleteness)} * d.schema_completeness
      + ${w(W.sellerVerified)} * (CASE WHEN d.seller_verified THEN 1.0 ELSE 0.0 END)
      + ${w(W.uptime)} * COALESCE(d.uptime, 0.5) + ${w(W.settlementSuccess)} * COALESCE(d.settlement_success, 0.5)
      + ${w(W.type)} * (CASE d.type WHEN 'http' THEN 1.0 ELSE 0.8 END)
      + ${w(W.network)} * (CASE d.network WHEN 'stellar:pubnet' THEN 1.0 ELSE 0.8 END)
      + ${w(W.asset)} * (CASE WHEN d.asset_code IN ('USDC', 'EURC') THEN 1.0 ELSE 0.5 END)
      + ${w(W.price)} * CAST(1 / (1 + 10 * d.amount) AS float8)
      + ${w(W.demotion)} * (CASE WHEN d.live IS FALSE OR d.price_drift OR d.payout_changed OR
        d.price_outlier OR d.self_dealt THEN 1.0 ELSE 0.0 END) AS double precision)`;
}

export function baseScoreExpr(W: RankingWeights = RANKING_WEIGHTS): string {
  return `CAST(${staticScoreExpr(W)} + ${w(W.usage)} * LEAST(1.0, ln(1 + d.paid_payers) / ln(101))
      + CASE WHEN d.host_verified THEN ${w(PROVEN_HOST_TIER)} ELSE 0.0 END AS double precision)`;
}

/** A posting's rank: its document's base_score plus the text weight of the best field carrying the term. */
function postingRankExpr(fields: string, base: string): string {
  const F = FIELD_WEIGHTS;
  return `(${base} + ${w(RANKING_WEIGHTS.text)} * CASE WHEN ${fields} & 8 <> 0 THEN ${w(F.name)}
             WHEN ${fields} & 4 <> 0 THEN ${w(F.tags)}
             WHEN ${fields} & 2 <> 0 THEN ${w(F.description)} ELSE ${w(F.schema)} END)`;
}

/**
 * Rewrites static_score and base_score of the documents `where` selects (over `d`) whose stored scores differ from
 * what RANKING_WEIGHTS give, and the ranks of their postings, in one statement. After a signal refresh, after
 * indexing, and on every search-sync pass over all documents (so a weight changed in ranking.ts is applied by the next
 * pass, no migration needed). Answers the number of documents rewritten.
 */
export function scoresSql(where: string): string {
  return `WITH x AS (
       SELECT d.resource_id, ${staticScoreExpr()} AS s, ${baseScoreExpr()} AS b FROM search_documents d WHERE ${where}),
     changed AS (
       UPDATE search_documents d SET static_score = x.s, base_score = x.b FROM x
        WHERE d.resource_id = x.resource_id AND (d.static_score IS DISTINCT FROM x.s OR d.base_score IS
          DISTINCT FROM x.b)
       RETURNING d.resource_id, d.base_score),
     ranked AS (
       UPDATE search_postings p SET rank = ${postingRankExpr('p.fields', 'c.base_score')} FROM changed c
        WHERE p.resource_id = c.resource_id)
     SELECT count(*)::int AS n FROM changed`;
}

/**
 * The postings of the discoverable documents `where` selects (over `d`; their old postings deleted first): one row per
 * lexeme of at most 40 characters, with the fields carrying it, its rank from the document's base_score and the
 * document's filter columns (type, network, asset, amount: migration 0132, so filtered searches read postings only).
 */
export function postingsSql(where: string, filterColumns = true): string {
  const bit = (label: string, v: number) => `(CASE WHEN '${label}' = ANY (t.weights) THEN ${v} ELSE 0 END)`;
  const fields = `GREATEST(1, ${bit('A', 8)} | ${bit('B', 4)} | ${bit('C', 2)} | ${bit('D', 1)})`;
  // filterColumns false: a schema before migration 0132 (only bench:search seeding an older tree's database).
  const [columns, values] = filterColumns
    ? [', type, network, asset_code, amount', ', d.type, d.network, d.asset_code, d.amount']
    : ['', ''];
  return `INSERT INTO search_postings (resource_id, term, fields, rank${columns})
    SELECT d.resource_id, t.lexeme, f.fields, ${postingRankExpr('f.fields', 'COALESCE(d.base_score, 0)')}${values}
      FROM search_documents d, unnest(d.document) AS t, LATERAL (SELECT ${fields} AS fields) f
     WHERE d.discoverable AND length(t.lexeme) <= 40 AND ${where}`;
}

const BATCH_SCORES_SQL = scoresSql('d.resource_id = ANY(CAST($1 AS text[]))');
const BATCH_POSTINGS_SQL = postingsSql('d.resource_id = ANY(CAST($1 AS text[]))');

const rowCount = (meta: unknown): number =>
  typeof meta === 'number' ? meta : Number((meta as { rowCount?: number } | null)?.rowCount ?? 0);

/** Documents recomputed per transaction of a sync pass (their signals, scores and postings' ranks). */
export const SIGNAL_BATCH = 500;
/** Documents re-checked per pass by the rolling audit (a backstop: every document is re-checked in turn). */
export const SIGNAL_AUDIT = 500;
/** Documents rescored per statement after a weight change. */
const RESCORE_BATCH = 5000;
/** A pass takes no new batch after this long; the next pass continues where it stopped. */
const PASS_BUDGET_MS = 20_000;

/** The fingerprint of the score expressions: changing a weight in ranking.ts changes it. */
export function scoresVersion(): string {
  return crypto.createHash('sha256').update(scoresSql('true')).digest('hex').slice(0, 16);
}

/**
 * The documents whose rows left a time window since the previous pass ($1, `aged_at`): payments (30 days, by
 * created_at for the success rate and count, by updated_at for usage and self-dealing), conformance probes and
 * liveness days (7 days). Read through the indexes of migration 0125.
 */
const AGED_SQL = `
  INSERT INTO search_signal_dirty (resource_id)
  SELECT DISTINCT x.resource_id FROM (
    SELECT p.resource_id FROM payment_attempts p WHERE p.status IN ('settled', 'settlement_failed')
       AND p.created_at > CAST($1 AS timestamptz) - interval '30 days' AND p.created_at <= now() - interval '30 days'
    UNION ALL
    SELECT p.resource_id FROM payment_attempts p WHERE p.status = 'settled'
       AND p.updated_at > CAST($1 AS timestamptz) - interval '30 days' AND p.updated_at <= now() - interval '30 days'
    UNION ALL
    SELECT pr.resource_id FROM resource_probes pr
     WHERE pr.checked_at > CAST($1 AS timestamptz) - interval '7 days' AND pr.checked_at <= now() - interval '7 days'
    UNION ALL
    SELECT y.resource_id FROM resource_liveness_days y
     WHERE y.day > CAST(CAST($1 AS timestamptz) AS date) - 7 AND y.day <= CAST(now() AS date) - 7) x
   WHERE x.resource_id IS NOT NULL`;

/**
 * The start of a pass, in one transaction: the documents whose windows moved since the last pass, the next slice of
 * the rolling audit (all documents on the first pass after migration 0125), and the pass's start time.
 */
async function markPass(db: Sequelize): Promise<{ startedAt: Date; scoresVersion: string | null }> {
  return db.transaction(async (transaction) => {
    const q = (sql: string, bind: unknown[] = []) =>
      db.query(sql, { bind, transaction, type: QueryTypes.SELECT }) as Promise<Row[]>;
    await q("INSERT INTO search_signal_sync (id, synced_at) VALUES (1, '-infinity') ON CONFLICT (id) DO NOTHING");
    const [state] = await q(
      'SELECT aged_at AS "agedAt", scores_version AS "scoresVersion", audit_after AS "auditAfter", now() AS now ' +
        'FROM search_signal_sync WHERE id = 1 FOR UPDATE',
    );
    let auditAfter = (state.auditAfter as string | null) ?? '';
    if (state.agedAt === null) {
      // First incremental pass: every document once (what each pass did before).
      await q('INSERT INTO search_signal_dirty (resource_id) SELECT resource_id FROM search_documents');
    } else {
      await q(AGED_SQL, [state.agedAt]);
      const audited = await q(
        `WITH next AS (SELECT resource_id FROM search_documents WHERE resource_id > $1 ORDER BY resource_id LIMIT $2)
         INSERT INTO search_signal_dirty (resource_id) SELECT resource_id FROM next RETURNING resource_id`,
        [auditAfter, SIGNAL_AUDIT],
      );
      auditAfter =
        audited.length < SIGNAL_AUDIT
          ? ''
          : audited.map((r) => r.resource_id as string).reduce((a, b) => (a > b ? a : b));
    }
    await q('UPDATE search_signal_sync SET aged_at = now(), audit_after = $1 WHERE id = 1', [auditAfter]);
    return { startedAt: state.now as Date, scoresVersion: (state.scoresVersion as string | null) ?? null };
  });
}

/** Rescores every document in keyset batches (after a weight change), then records the weights' fingerprint. */
async function rescoreAll(db: Sequelize, version: string): Promise<void> {
  const range = scoresSql('d.resource_id > $1 AND d.resource_id <= $2');
  for (let after = ''; ;) {
    const [b] = (await db.query(
      `SELECT max(resource_id) AS last FROM (SELECT resource_id FROM search_documents WHERE resource_id > $1
        ORDER BY resource_id LIMIT ${RESCORE_BATCH}) b`,
      { bind: [after], type: QueryTypes.SELECT },
    )) as Row[];
    if (!b?.last) break;
    await db.query(range, { bind: [after, b.last] });
    after = b.last as string;
  }
  await db.query('UPDATE search_signal_sync SET scores_version = $1 WHERE id = 1', { bind: [version] });
}

/** Turns the queue's wider rows (seller, seller + payer, payTo, host) into one row per document, in one transaction. */
async function expandDirty(db: Sequelize): Promise<void> {
  await db.transaction(async (transaction) => {
    const [rows] = (await db.query(
      'DELETE FROM search_signal_dirty WHERE resource_id IS NULL RETURNING seller_id, payer, pay_to, host',
      { transaction },
    )) as [
      Array<{ seller_id: string | null; payer: string | null; pay_to: string | null; host: string | null }>,
      unknown,
    ];
    if (!rows.length) return;
    const uniq = (a: Array<string | null>) => [...new Set(a.filter((x): x is string => x !== null))];
    const sellers = uniq(rows.filter((r) => r.seller_id && !r.payer).map((r) => r.seller_id));
    const pairs = [...new Set(rows.filter((r) => r.seller_id && r.payer).map((r) => `${r.seller_id}\n${r.payer}`))];
    const payTos = uniq(rows.map((r) => r.pay_to));
    const hosts = uniq(rows.map((r) => r.host));
    const parts = [
      // every listing of the seller (resources_seller_idx)
      'SELECT r.id FROM resources r WHERE r.seller_id = ANY(CAST($1 AS text[]))',
      // the seller's listings that wallet paid (payment_attempts_settled_parties_idx)
      `SELECT d.resource_id FROM unnest(CAST($2 AS text[]), CAST($3 AS text[])) AS x(seller_id, payer)
         JOIN payment_attempts p ON p.payer = x.payer AND p.status = 'settled'
         JOIN search_documents d ON d.resource_id = p.resource_id AND d.seller_id = x.seller_id`,
      // the documents paid to that address (search_documents_pay_to_idx)
      'SELECT d.resource_id FROM search_documents d WHERE d.pay_to = ANY(CAST($4 AS text[]))',
    ];
    // the documents whose URL host is under a domain whose ownership moved (rare: a scan of the documents)
    if (hosts.length)
      parts.push(
        'SELECT d.resource_id FROM search_documents d WHERE host_suffixes(url_host(d.url)) && CAST($5 AS text[])',
      );
    await db.query(
      `INSERT INTO search_signal_dirty (resource_id) SELECT DISTINCT id FROM (${parts.join(' UNION ALL ')}) x(id)`,
      {
        bind: [
          sellers,
          pairs.map((p) => p.split('\n')[0]),
          pairs.map((p) => p.split('\n')[1]),
          payTos,
          ...(hosts.length ? [hosts] : []),
        ],
        transaction,
      },
    );
  });
}

/**
 * One incremental search-sync pass: marks what time moved, rescores everything if the weights changed, then
 * recomputes the queued documents in batches of SIGNAL_BATCH (each batch one transaction that deletes its queue rows,
 * rewrites the documents whose signals changed, then their scores and postings' ranks). Records the pass
 * (search_signal_sync.synced_at, what search reads for freshness) once every row queued before it was processed.
 */
async function syncSignals(db: Sequelize): Promise<{ rewritten: number; drained: boolean }> {
  const started = Date.now();
  const pass = await markPass(db);
  const version = scoresVersion();
  if (pass.scoresVersion !== version) await rescoreAll(db, version);
  await expandDirty(db);
  const [top] = (await db.query('SELECT max(id) AS id FROM search_signal_dirty', { type: QueryTypes.SELECT })) as Row[];
  const lastId = (top?.id as string | null) ?? '0';
  let rewritten = 0;
  let drained = false;
  while (Date.now() - started < PASS_BUDGET_MS) {
    const ids = (
      (await db.query(
        `SELECT DISTINCT resource_id FROM (SELECT resource_id FROM search_signal_dirty WHERE id <= $1 ORDER BY id
          LIMIT ${4 * SIGNAL_BATCH}) x LIMIT ${SIGNAL_BATCH}`,
        { bind: [lastId], type: QueryTypes.SELECT },
      )) as Row[]
    ).map((r) => r.resource_id as string);
    if (!ids.length) {
      drained = true;
      break;
    }
    rewritten += await db.transaction(async (transaction) => {
      await db.query('DELETE FROM search_signal_dirty WHERE resource_id = ANY(CAST($1 AS text[]))', {
        bind: [ids],
        transaction,
      });
      const [, count] = (await db.query(SIGNALS_CHANGED_SQL, { bind: [ids], transaction })) as [unknown, unknown];
      await db.query(BATCH_SCORES_SQL, { bind: [ids], transaction });
      return rowCount(count);
    });
  }
  if (drained)
    await db.query('UPDATE search_signal_sync SET synced_at = GREATEST(synced_at, $1) WHERE id = 1', {
      bind: [pass.startedAt],
    });
  return { rewritten, drained };
}

export function createSearchIndexRepository(db: Sequelize): SearchIndexRepository {
  const select = <T extends object>(sql: string, replacements: Record<string, unknown>, transaction?: Transaction) =>
    db.query<T>(sql, { replacements, type: QueryTypes.SELECT, transaction });

  /**
   * The last step of an indexing transaction (and of the search-sync pass): lock the lag row, then recompute it.
   * Under READ COMMITTED the recompute's snapshot is taken after the lock is granted, so it sees every indexing
   * transaction that held the lock before (they have committed) and this one's own marks; a transaction still
   * indexing will recompute after it. So the row is exact once indexing is quiet: search reads it instead of
   * counting. Only the commit phase of concurrent indexers is serialised. (A catalog event committed while the row
   * already said "behind" and cleared by a recompute that could not see it yet is reported once it is indexed.)
   */
  const recordLagIn = async (transaction: Transaction, vocabularyGrew = false) => {
    await db.query('SELECT 1 FROM search_index_state WHERE id = 1 FOR UPDATE', { transaction });
    if (vocabularyGrew)
      await db.query('UPDATE search_index_state SET vocabulary_generation = vocabulary_generation + 1 WHERE id = 1', {
        transaction,
      });
    await db.query(
      `UPDATE search_index_state s SET unindexed_since = o.since, updated_at = now()
         FROM (SELECT min(created_at) AS since FROM catalog_events WHERE indexed_at IS NULL) o
        WHERE s.id = 1 AND s.unindexed_since IS DISTINCT FROM o.since`,
      { transaction },
    );
  };

  const repo: SearchIndexRepository = {
    async resourceOfEvent(catalogEventId) {
      const [row] = await select<{ resourceId: string }>(
        'SELECT resource_id AS "resourceId" FROM catalog_events WHERE id = :catalogEventId',
        { catalogEventId },
      );
      return row?.resourceId ?? null;
    },

    async indexResource(resourceId, build) {
      const outcomes = await repo.indexResources([resourceId], build);
      return outcomes.get(resourceId) ?? 'removed';
    },

    async indexResources(resourceIds, build) {
      const ids = [...new Set(resourceIds)].sort();
      const outcomes = new Map<string, IndexOutcome>();
      if (ids.length === 0) return outcomes;
      return db.transaction(async (transaction) => {
        const q = (sql: string, bind: unknown[]) =>
          db.query(sql, { bind, transaction, type: QueryTypes.SELECT }) as Promise<Row[]>;
        // Per-resource locks, taken in one order (sorted ids) so two batches never wait on each other in a cycle.
        await q("SELECT count(pg_advisory_xact_lock(hashtext('index:' || k))) FROM unnest(CAST($1 AS text[])) AS k", [
          ids,
        ]);
        // One read for the whole batch: each resource, the newest unindexed catalog event it has, and every fact the
        // anti-poisoning rules need (the seller, its declaration, who owns the payTo wallet, whether another seller
        // verified the same domain, the oldest other active resource offering the same MCP tool on the same URL).
        const rows = await q(SNAPSHOT_SQL, [ids]);
        const docs: SearchDocument[] = [];
        let newWords: Row[] = [];
        const removed: string[] = [];
        const events: Array<{ id: string; maxEvent: string }> = [];
        for (const row of rows) {
          const resourceId = row.requestedId as string;
          if (row.maxEvent) events.push({ id: resourceId, maxEvent: row.maxEvent as string });
          const resource = row.id ? toResource(row) : null;
          let snap: IndexSnapshot = {
            resource,
            seller: null,
            declaration: null,
            payToOwner: null,
            domainVerifiedByOther: false,
            mcpToolOwner: null,
            hostOwner: null,
          };
          if (resource && resource.status === 'active') {
            snap = {
              resource,
              seller: row.sId
                ? {
                    id: row.sId as string,
                    walletAddress: row.sWallet as string,
                    domain: row.sDomain as string,
                    domainVerified: row.sVerifiedAt !== null,
                  }
                : null,
              declaration: row.dSellerId
                ? { payTo: (row.dPayTo as string | null) ?? null, trusted: Boolean(row.dTrusted) }
                : null,
              payToOwner: (row.payToOwner as string | null) ?? null,
              domainVerifiedByOther: Boolean(row.domainVerifiedByOther),
              mcpToolOwner: row.toolOwnerId
                ? { resourceId: row.toolOwnerId as string, sellerId: row.toolOwnerSellerId as string }
                : null,
              hostOwner: (row.hostOwner as string | null) ?? null,
            };
          }
          const doc = build(snap);
          if (!doc) {
            removed.push(resourceId);
            outcomes.set(resourceId, 'removed');
          } else {
            docs.push(doc);
            outcomes.set(resourceId, doc.discoverable ? 'indexed' : 'rejected');
          }
        }
        if (removed.length)
          await q('DELETE FROM search_documents WHERE resource_id = ANY(CAST($1 AS text[]))', [removed]);
        if (docs.length) {
          await q('DELETE FROM search_postings WHERE resource_id = ANY(CAST($1 AS text[]))', [
            docs.map((d) => d.resourceId),
          ]);
          await q(UPSERT_SQL, [
            JSON.stringify(
              docs.map((d) => ({
                ...d,
                amount: amountColumn(d.amount),
                rejectionReasons: d.rejectionReasons,
                extensionNames: d.extensionNames,
              })),
            ),
          ]);
          await db.query(SIGNALS_BATCH_SQL, { bind: [docs.map((d) => d.resourceId)], transaction });
          // Scores from RANKING_WEIGHTS, then the documents' postings ranked by them (impact-ordered index).
          await q(BATCH_SCORES_SQL, [docs.map((d) => d.resourceId)]);
          await q(BATCH_POSTINGS_SQL, [docs.map((d) => d.resourceId)]);
          // New words enter the vocabulary (typo tolerance, document frequency) at once; counts are recounted by
          // refreshVocabulary. DO NOTHING takes no row lock on words already known.
          newWords = await q(
            `INSERT INTO search_vocabulary (word, ndoc)
             SELECT DISTINCT t.lexeme, 1 FROM search_documents d, unnest(d.document) AS t
              WHERE d.resource_id = ANY(CAST($1 AS text[])) AND d.discoverable AND t.lexeme ~
                '[[:alpha:]]' AND length(t.lexeme) <= 40
             ON CONFLICT (word) DO NOTHING RETURNING word`,
            [docs.map((d) => d.resourceId)],
          );
        }
        if (events.length) {
          await q(
            `UPDATE catalog_events e SET indexed_at = now() FROM unnest(CAST($1 AS text[]), CAST($2 AS text[])) AS
              m(resource_id, max_id)
              WHERE e.resource_id = m.resource_id AND e.indexed_at IS NULL AND e.id <= m.max_id`,
            [events.map((e) => e.id), events.map((e) => e.maxEvent)],
          );
        }
        await recordLagIn(transaction, newWords.length > 0);
        return outcomes;
      });
    },

    async staleResources(olderThanSeconds, limit) {
      const rows = await select<{ resourceId: string }>(
        `SELECT DISTINCT resource_id AS "resourceId" FROM (
           SELECT resource_id FROM catalog_events WHERE indexed_at IS NULL AND created_at < now() -
             make_interval(secs => :age)
           ORDER BY created_at LIMIT :limit) e`,
        { age: olderThanSeconds, limit },
      );
      return rows.map((r) => r.resourceId);
    },

    async refreshSignals(resourceId?: string, transaction?: Transaction) {
      if (!resourceId) return (await syncSignals(db)).rewritten;
      const [, count] = (await db.query(SIGNALS_BATCH_SQL, { bind: [[resourceId]], transaction })) as [
        unknown,
        unknown,
      ];
      // The scores follow the signals: the document and its postings.
      await db.query(BATCH_SCORES_SQL, { bind: [[resourceId]], transaction });
      return rowCount(count);
    },

    async refreshVocabulary(olderThanSeconds) {
      return db.transaction(async (transaction) => {
        const [due] = await select<{ id: number }>(
          `SELECT id FROM search_vocabulary_state WHERE id = 1 AND refreshed_at <= now() - make_interval(secs ` +
            `=> :age) FOR UPDATE SKIP LOCKED`,
          { age: olderThanSeconds },
          transaction,
        );
        if (!due) return false;
        await db.query(
          `WITH stat AS (SELECT word, ndoc FROM ts_stat('SELECT document FROM search_documents WHERE
            discoverable') WHERE word ~ '[[:alpha:]]' AND length(word) <= 40),
                gone AS (DELETE FROM search_vocabulary v WHERE NOT EXISTS (SELECT 1 FROM stat WHERE stat.word = v.word))
           INSERT INTO search_vocabulary (word, ndoc) SELECT word, ndoc FROM stat
           ON CONFLICT (word) DO UPDATE SET ndoc = EXCLUDED.ndoc WHERE search_vocabulary.ndoc IS
             DISTINCT FROM EXCLUDED.ndoc`,
          { transaction },
        );
        await db.query('UPDATE search_vocabulary_state SET refreshed_at = now() WHERE id = 1', { transaction });
        await db.query('UPDATE search_index_state SET vocabulary_generation = vocabulary_generation + 1 WHERE id = 1', {
          transaction,
        });
        return true;
      });
    },

    async purgeObserved() {
      const [, meta] = (await db.query(
        `DELETE FROM observed_resources WHERE last_payment_at < now() - interval '30 days'`,
      )) as [unknown, { rowCount?: number } | number];
      return typeof meta === 'number' ? meta : Number(meta?.rowCount ?? 0);
    },

    async markBehind() {
      await db.query(
        'UPDATE search_index_state SET unindexed_since = now(), updated_at = now() WHERE id = 1 AND ' +
          'unindexed_since IS NULL',
      );
    },

    async recordLag() {
      await db.transaction((transaction) => recordLagIn(transaction));
    },

    async counts() {
      const [row] = await select<{ resources: string; sellers: string; lag: number | null }>(
        `SELECT (SELECT count(*) FROM search_documents d WHERE d.discoverable) AS resources,
                (SELECT count(DISTINCT seller_id) FROM search_documents d WHERE d.discoverable) AS sellers,
                (SELECT EXTRACT(EPOCH FROM now() - min(created_at))::float8 FROM catalog_events
                  WHERE indexed_at IS NULL) AS lag`,
        {},
      );
      const volume = await select<{ network: string; asset: string; amount: string }>(
        `SELECT network, asset_code AS asset, sum(amount)::text AS amount FROM settlements WHERE status = ` +
          `'settled' GROUP BY network, asset_code`,
        {},
      );
      return {
        resources: Number(row.resources),
        activeSellers: Number(row.sellers),
        lagSeconds: Math.max(0, Number(row.lag ?? 0)),
        volume: volume.map((v) => ({ network: v.network, asset: v.asset, amount: Number(v.amount) })),
      };
    },
  };
  return repo;
}
