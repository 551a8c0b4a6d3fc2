import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { normalizeAmount } from '../domain/amount';
import type { LivenessState, LivenessTarget, Trust, TrustRepository } from '../domain/trust/types';
import { scoresSql } from './search-index-repository';

type Row = Record<string, unknown>;

/**
 * Due resources: every discoverable listing (search_documents) never probed, then those whose next probe is due,
 * oldest first. Both steps walk an index (search_documents_listing_idx and resource_liveness_due_idx).
 */
const DUE_SQL = `
  WITH fresh AS (
    SELECT d.resource_id FROM search_documents d
     WHERE d.discoverable AND NOT EXISTS (SELECT 1 FROM resource_liveness l WHERE l.resource_id = d.resource_id)
     ORDER BY d.resource_id DESC LIMIT $1),
  due AS (
    SELECT l.resource_id FROM resource_liveness l WHERE l.next_check_at <= $2 ORDER BY l.next_check_at LIMIT $1),
  picked AS (SELECT resource_id FROM fresh UNION SELECT resource_id FROM due LIMIT $1)
  SELECT d.resource_id AS id, d.type, d.url, url_host(d.url) AS host, d.network, d.pay_to AS "payTo",
    d.asset_code AS "assetCode",
         d.asset_issuer AS "assetIssuer", d.amount::text AS amount, d.mcp_tool_name AS "toolName",
         l.resource_id AS "probed", l.live, l.reason, l.checked_at AS "checkedAt", l.next_check_at AS
           "nextCheckAt", l.dead_since AS "deadSince",
         l.consecutive_failures AS failures, l.latencies_ms AS latencies, l.latency_p50_ms AS p50,
           l.latency_p99_ms AS p99,
         l.observed_pay_to AS "observedPayTo", l.observed_amount::text AS "observedAmount",
         COALESCE((SELECT json_agg(json_build_object('kind', x.kind, 'observed', x.observed)) FROM resource_drift x
                    WHERE x.resource_id = d.resource_id AND x.resolved_at IS NULL), '[]'::json) AS drift
    FROM picked p JOIN search_documents d ON d.resource_id = p.resource_id
    LEFT JOIN resource_liveness l ON l.resource_id = d.resource_id
   WHERE d.discoverable`;

const RECORD_SQL = `
  WITH st AS (
    INSERT INTO resource_liveness (resource_id, host, live, reason, checked_at, next_check_at, dead_since,
      consecutive_failures,
                                   latencies_ms, latency_p50_ms, latency_p99_ms, observed_pay_to, observed_amount)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CAST($9 AS integer[]), $10, $11, $12, CAST($13 AS numeric))
    ON CONFLICT (resource_id) DO UPDATE SET host = EXCLUDED.host, live = EXCLUDED.live, reason = EXCLUDED.reason,
       checked_at = EXCLUDED.checked_at, next_check_at = EXCLUDED.next_check_at, dead_since = EXCLUDED.dead_since,
       consecutive_failures = EXCLUDED.consecutive_failures, latencies_ms = EXCLUDED.latencies_ms,
       latency_p50_ms = EXCLUDED.latency_p50_ms, latency_p99_ms = EXCLUDED.latency_p99_ms,
       observed_pay_to = EXCLUDED.observed_pay_to, observed_amount = EXCLUDED.observed_amount
    RETURNING resource_id),
  day AS (
    INSERT INTO resource_liveness_days (resource_id, day, probes, passed) VALUES ($1, CAST($5 AS
      timestamptz)::date, 1, CASE WHEN $14 THEN 1 ELSE 0 END)
    ON CONFLICT (resource_id, day) DO UPDATE SET probes = resource_liveness_days.probes + 1, passed =
      resource_liveness_days.passed + EXCLUDED.passed
    RETURNING resource_id),
  -- The listing matches the live 402 again: its drifts are over (whether or not the seller confirmed them).
  resolved AS (
    UPDATE resource_drift SET resolved_at = $5 WHERE resource_id = $1 AND resolved_at IS NULL AND $15 AND kind
      <> ALL(CAST($16 AS text[]))
    RETURNING resource_id),
  added AS (
    INSERT INTO resource_drift (resource_id, kind, listed, observed, detected_at)
    SELECT $1, k, l, o, $5 FROM unnest(CAST($17 AS text[]), CAST($18 AS text[]), CAST($19 AS text[])) AS n(k, l, o)
    ON CONFLICT (resource_id, kind) WHERE confirmed_at IS NULL AND resolved_at IS NULL
      DO UPDATE SET observed = EXCLUDED.observed, listed = EXCLUDED.listed
    RETURNING resource_id)
  SELECT (SELECT count(*) FROM st) + (SELECT count(*) FROM day) + (SELECT count(*) FROM resolved) + (SELECT
    count(*) FROM added) AS n`;

/** The search document's trust flags from the liveness state and the open drifts (after RECORD_SQL committed). */
const FLAGS_SQL = `
  UPDATE search_documents d SET live = l.live, dead_since = l.dead_since, liveness_dropped = $2,
         owner_verified = CASE WHEN l.observed_pay_to IS NULL THEN NULL ELSE l.observed_pay_to = d.pay_to END,
         uptime = u.uptime,
         price_drift = EXISTS (SELECT 1 FROM resource_drift x WHERE x.resource_id = d.resource_id AND
           x.kind = 'price' AND x.confirmed_at IS NULL AND x.resolved_at IS NULL),
         payout_changed = EXISTS (SELECT 1 FROM resource_drift x WHERE x.resource_id = d.resource_id AND
           x.kind = 'payout' AND x.confirmed_at IS NULL AND x.resolved_at IS NULL)
    FROM resource_liveness l,
         LATERAL (SELECT sum(passed)::float8 / NULLIF(sum(probes), 0) AS uptime FROM resource_liveness_days y
                   WHERE y.resource_id = l.resource_id AND y.day > CAST(now() AS date) - 7) u
   WHERE d.resource_id = $1 AND l.resource_id = d.resource_id`;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

function toState(r: Row): LivenessState | null {
  if (!r.probed) return null;
  return {
    live: (r.live as boolean | null) ?? null,
    reason: (r.reason as string | null) ?? null,
    checkedAt: (r.checkedAt as Date | null) ?? null,
    nextCheckAt: r.nextCheckAt as Date,
    deadSince: (r.deadSince as Date | null) ?? null,
    dropped: false,
    consecutiveFailures: Number(r.failures ?? 0),
    latenciesMs: ((r.latencies as number[] | null) ?? []).map(Number),
    p50: num(r.p50),
    p99: num(r.p99),
    observedPayTo: (r.observedPayTo as string | null) ?? null,
    observedAmount: r.observedAmount ? normalizeAmount(String(r.observedAmount)) : null,
  };
}

export function createTrustRepository(db: Sequelize): TrustRepository {
  return {
    async dueTargets(limit, now) {
      const { rows } = await pgQuery<Row>(db, DUE_SQL, [limit, now]);
      return rows.map((r) => ({
        id: r.id as string,
        type: r.type as LivenessTarget['type'],
        url: r.url as string,
        host: (r.host as string | null) ?? (r.url as string),
        network: r.network as string,
        payTo: r.payTo as string,
        assetCode: r.assetCode as string,
        assetIssuer: r.assetIssuer as string,
        amount: normalizeAmount(String(r.amount)),
        toolName: (r.toolName as string | null) ?? null,
        state: toState(r),
        knownDrift: (r.drift as Array<{ kind: 'price' | 'payout'; observed: string }>) ?? [],
      }));
    },

    async record(target, state, obs, drift) {
      const driftKinds = drift.map((d) => d.kind);
      // Kinds the live answer still differs in (new or known): those drifts stay open.
      const stillDiffers = [
        ...(obs.live && obs.amount !== null && normalizeAmount(obs.amount) !== normalizeAmount(target.amount)
          ? ['price']
          : []),
        ...(obs.live && obs.payTo !== null && obs.payTo !== target.payTo ? ['payout'] : []),
      ];
      await db.transaction(async (transaction) => {
        const q = (sql: string, bind: unknown[]) => db.query(sql, { bind, transaction });
        await q(RECORD_SQL, [
          target.id,
          target.host,
          state.live,
          state.reason,
          state.checkedAt,
          state.nextCheckAt,
          state.deadSince,
          state.consecutiveFailures,
          state.latenciesMs,
          state.p50,
          state.p99,
          state.observedPayTo,
          state.observedAmount,
          obs.live,
          obs.live,
          [...new Set([...stillDiffers, ...driftKinds])],
          driftKinds,
          drift.map((d) => d.listed),
          drift.map((d) => d.observed),
        ]);
        await q(FLAGS_SQL, [target.id, state.dropped]);
        // The flags move the static score (the demotion) and the postings' ranks: rewritten now when they changed.
        await q(scoresSql('d.resource_id = $1'), [target.id]);
      });
    },

    async refreshPriceOutliers(factor, minComparables) {
      const { rowCount } = await pgQuery(
        db,
        `WITH med AS (
           SELECT type, network, asset_code, asset_issuer, percentile_cont(0.5) WITHIN GROUP (ORDER BY
             amount) AS m, count(*) AS n
             FROM search_documents WHERE discoverable GROUP BY 1, 2, 3, 4)
         UPDATE search_documents d SET price_outlier = x.outlier
           FROM (SELECT d2.resource_id, COALESCE(med.n >= $2 AND d2.amount > med.m * $1, false) AS outlier
                   FROM search_documents d2 LEFT JOIN med ON med.type = d2.type AND med.network = d2.network
                        AND med.asset_code = d2.asset_code AND med.asset_issuer = d2.asset_issuer) x
          WHERE x.resource_id = d.resource_id AND d.price_outlier IS DISTINCT FROM x.outlier`,
        [factor, minComparables],
      );
      if (rowCount > 0) await pgQuery(db, scoresSql('d.price_outlier OR d.static_score < 0'), []);
      return rowCount;
    },

    async trustOf(resourceIds) {
      const out = new Map<string, Trust>();
      if (resourceIds.length === 0) return out;
      const { rows } = await pgQuery<Row>(
        db,
        `SELECT r.id, d.resource_id AS indexed, l.live, l.checked_at AS "checkedAt", l.latency_p50_ms AS p50,
          l.latency_p99_ms AS p99,
                d.uptime, d.owner_verified AS "ownerVerified", COALESCE(d.host_verified, false) AS "domainVerified",
                COALESCE(d.price_drift, false) AS "priceDrift", COALESCE(d.payout_changed, false) AS "payoutChanged",
                COALESCE(d.price_outlier, false) AS "priceOutlier", COALESCE(d.unique_payers, 0) AS payers,
                COALESCE(d.settlement_count, 0) AS calls, d.last_payment_at IS NOT NULL AS settled,
                COALESCE(d.self_dealt, false) AS "selfDealing",
                COALESCE(d.live IS FALSE OR d.price_drift OR d.payout_changed OR d.price_outlier
                  OR d.self_dealt, false) AS demoted
           FROM unnest(CAST($1 AS text[])) AS k(id) JOIN resources r ON r.id = k.id
           LEFT JOIN search_documents d ON d.resource_id = r.id
           LEFT JOIN resource_liveness l ON l.resource_id = r.id`,
        [resourceIds],
      );
      for (const r of rows) {
        const p50 = num(r.p50);
        const p99 = num(r.p99);
        const uptime = num(r.uptime);
        out.set(r.id as string, {
          live: (r.live as boolean | null) ?? null,
          checkedAt: (r.checkedAt as Date | null) ?? null,
          uptime7d: uptime === null ? null : Math.round(uptime * 1000) / 1000,
          latency: p50 === null || p99 === null ? null : { p50Ms: p50, p99Ms: p99 },
          ownerVerified: (r.ownerVerified as boolean | null) ?? null,
          domainVerified: Boolean(r.domainVerified),
          priceDrift: Boolean(r.priceDrift),
          payoutChanged: Boolean(r.payoutChanged),
          priceOutlier: Boolean(r.priceOutlier),
          selfDealing: Boolean(r.selfDealing),
          demoted: Boolean(r.demoted),
          payers30d: Number(r.payers),
          calls30d: Number(r.calls),
          settledByUs: Boolean(r.settled),
        });
      }
      return out;
    },

    async confirmDrift(resourceId, sellerId, kind) {
      return db.transaction(async (transaction) => {
        const [rows] = (await db.query(
          `UPDATE resource_drift SET confirmed_at = now(), confirmed_by = $2
            WHERE resource_id = $1 AND confirmed_at IS NULL AND resolved_at IS NULL AND ($3::text IS
              NULL OR kind = $3) RETURNING id`,
          { bind: [resourceId, sellerId, kind], transaction },
        )) as [unknown[], unknown];
        await db.query(
          `UPDATE search_documents d SET
             price_drift = EXISTS (SELECT 1 FROM resource_drift x WHERE x.resource_id = d.resource_id
               AND x.kind = 'price' AND x.confirmed_at IS NULL AND x.resolved_at IS NULL),
             payout_changed = EXISTS (SELECT 1 FROM resource_drift x WHERE x.resource_id =
               d.resource_id AND x.kind = 'payout' AND x.confirmed_at IS NULL AND x.resolved_at IS NULL)
            WHERE d.resource_id = $1`,
          { bind: [resourceId], transaction },
        );
        await db.query(scoresSql('d.resource_id = $1'), { bind: [resourceId], transaction });
        return rows.length;
      });
    },

    async openDrifts(resourceId) {
      const { rows } = await pgQuery<Row>(
        db,
        `SELECT kind, listed, observed, detected_at AS "detectedAt" FROM resource_drift
          WHERE resource_id = $1 AND confirmed_at IS NULL AND resolved_at IS NULL ORDER BY detected_at`,
        [resourceId],
      );
      return rows.map((r) => ({
        kind: r.kind as 'price' | 'payout',
        listed: r.listed as string,
        observed: r.observed as string,
        detectedAt: r.detectedAt as Date,
      }));
    },
  };
}
