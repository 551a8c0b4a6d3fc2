import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import { formatAmount } from '../domain/amount';
import { stroopsColumn } from './amount-column';
import type { LivenessState, LivenessTarget, ProbeOutcome, Trust, TrustRepository } from '../domain/trust/types';
import { scoresSql } from './search-index-repository';

type Row = Record<string, unknown>;

/** The columns of a claimed target: the search document's listing and the liveness row's state and claim. */
const TARGETS_SQL = `
  SELECT d.resource_id AS id, d.type, d.url, l.host, d.network, d.pay_to AS "payTo", d.asset_code AS "assetCode",
         d.asset_issuer AS "assetIssuer", d.amount::text AS amount, d.mcp_tool_name AS "toolName",
         l.claim::text AS claim, l.checked_at IS NOT NULL AS probed, l.live, l.reason, l.checked_at AS "checkedAt",
         l.next_check_at AS "nextCheckAt", l.dead_since AS "deadSince", l.consecutive_failures AS failures,
         l.latencies_ms AS latencies, l.latency_p50_ms AS p50, l.latency_p99_ms AS p99,
         l.observed_pay_to AS "observedPayTo", l.observed_amount::text AS "observedAmount",
         COALESCE((SELECT json_agg(json_build_object('kind', x.kind, 'observed', x.observed)) FROM resource_drift x
                    WHERE x.resource_id = d.resource_id AND x.resolved_at IS NULL), '[]'::json) AS drift
    FROM unnest(CAST($1 AS text[])) AS k(id)
    JOIN resource_liveness l ON l.resource_id = k.id
    JOIN search_documents d ON d.resource_id = k.id
   WHERE d.discoverable`;

/**
 * Claims of due rows (suspects, then overdue; both walk an index on next_check_at): the next check moves to the end
 * of the lease and the claim is bumped. SKIP LOCKED: rows another process is claiming right now are left to it; a
 * row another process claimed and committed is no longer due when re-checked.
 */
const claimSql = (suspectsOnly: boolean) => `
  UPDATE resource_liveness l SET next_check_at = $3, claim = l.claim + 1
    FROM (SELECT l2.resource_id FROM resource_liveness l2
            JOIN search_documents d ON d.resource_id = l2.resource_id AND d.discoverable
           WHERE l2.next_check_at <= $2
             ${suspectsOnly ? 'AND l2.consecutive_failures > 0 AND l2.live IS NOT FALSE' : ''}
           ORDER BY l2.next_check_at LIMIT $1 FOR UPDATE OF l2 SKIP LOCKED) p
   WHERE l.resource_id = p.resource_id
  RETURNING l.resource_id AS id`;

/** Claims of never probed discoverable listings: a liveness row inserted under the lease (claim 1). */
const CLAIM_FRESH_SQL = `
  INSERT INTO resource_liveness (resource_id, host, next_check_at, claim)
  SELECT d.resource_id, COALESCE(url_host(d.url), d.url), $2, 1 FROM search_documents d
   WHERE d.discoverable AND NOT EXISTS (SELECT 1 FROM resource_liveness l WHERE l.resource_id = d.resource_id)
   ORDER BY d.resource_id DESC LIMIT $1
  ON CONFLICT (resource_id) DO NOTHING
  RETURNING resource_id AS id`;

/**
 * One batch of probe outcomes in one statement. `st` writes each state only where the row still carries the claim
 * the probe was made under (compare-and-set; the claim is bumped, so the same outcome cannot be written twice); the
 * day's counters, resolved drifts (a live answer matching the listing again in a kind) and new drifts follow only
 * the rows `st` wrote.
 */
const RECORD_BATCH_SQL = `
  WITH i AS (
    SELECT * FROM unnest(CAST($1 AS text[]), CAST($2 AS bigint[]), CAST($3 AS text[]), CAST($4 AS boolean[]),
                         CAST($5 AS text[]), CAST($6 AS timestamptz[]), CAST($7 AS timestamptz[]),
                         CAST($8 AS timestamptz[]), CAST($9 AS integer[]), CAST($10 AS text[]),
                         CAST($11 AS float8[]), CAST($12 AS float8[]), CAST($13 AS text[]), CAST($14 AS numeric[]),
                         CAST($15 AS boolean[]), CAST($16 AS text[]))
      AS i(id, claim, host, live, reason, checked_at, next_check_at, dead_since, failures, latencies, p50, p99,
           pay_to, amount, passed, keep)),
  st AS (
    UPDATE resource_liveness l SET host = i.host, live = i.live, reason = i.reason, checked_at = i.checked_at,
           next_check_at = i.next_check_at, dead_since = i.dead_since, consecutive_failures = i.failures,
           latencies_ms = CAST(i.latencies AS integer[]), latency_p50_ms = i.p50, latency_p99_ms = i.p99,
           observed_pay_to = i.pay_to, observed_amount = i.amount, claim = l.claim + 1
      FROM i WHERE l.resource_id = i.id AND l.claim = i.claim
    RETURNING l.resource_id, i.checked_at, i.passed, i.keep),
  day AS (
    INSERT INTO resource_liveness_days (resource_id, day, probes, passed)
    SELECT resource_id, CAST(checked_at AS date), 1, CASE WHEN passed THEN 1 ELSE 0 END FROM st
    ON CONFLICT (resource_id, day) DO UPDATE SET probes = resource_liveness_days.probes + 1,
       passed = resource_liveness_days.passed + EXCLUDED.passed
    RETURNING resource_id),
  -- The listing matches the live 402 again in a kind: that drift is over (whether or not the seller confirmed it).
  resolved AS (
    UPDATE resource_drift x SET resolved_at = st.checked_at FROM st
     WHERE x.resource_id = st.resource_id AND x.resolved_at IS NULL AND st.keep IS NOT NULL
       AND x.kind <> ALL (string_to_array(st.keep, ','))
    RETURNING x.resource_id),
  added AS (
    INSERT INTO resource_drift (resource_id, kind, listed, observed, detected_at)
    SELECT n.id, n.kind, n.listed, n.observed, st.checked_at
      FROM unnest(CAST($17 AS text[]), CAST($18 AS text[]), CAST($19 AS text[]), CAST($20 AS text[]))
        AS n(id, kind, listed, observed)
      JOIN st ON st.resource_id = n.id
    ON CONFLICT (resource_id, kind) WHERE confirmed_at IS NULL AND resolved_at IS NULL
      DO UPDATE SET observed = EXCLUDED.observed, listed = EXCLUDED.listed
    RETURNING resource_id)
  SELECT st.resource_id AS id FROM st`;

/**
 * The search documents' trust flags from the liveness state and the open drifts (after RECORD_BATCH_SQL, same
 * transaction), rewritten only where one changed: a listing that keeps answering the same way costs no write here.
 */
const FLAGS_SQL = `
  WITH x AS (
    SELECT k.id, l.live, l.dead_since, k.dropped,
           CASE WHEN l.observed_pay_to IS NULL THEN NULL ELSE l.observed_pay_to = d0.pay_to END AS owner_verified,
           (SELECT sum(y.passed)::float8 / NULLIF(sum(y.probes), 0) FROM resource_liveness_days y
             WHERE y.resource_id = k.id AND y.day > CAST(now() AS date) - 7) AS uptime,
           EXISTS (SELECT 1 FROM resource_drift r WHERE r.resource_id = k.id AND r.kind = 'price'
                     AND r.confirmed_at IS NULL AND r.resolved_at IS NULL) AS price_drift,
           EXISTS (SELECT 1 FROM resource_drift r WHERE r.resource_id = k.id AND r.kind = 'payout'
                     AND r.confirmed_at IS NULL AND r.resolved_at IS NULL) AS payout_changed
      FROM unnest(CAST($1 AS text[]), CAST($2 AS boolean[])) AS k(id, dropped)
      JOIN resource_liveness l ON l.resource_id = k.id
      JOIN search_documents d0 ON d0.resource_id = k.id)
  UPDATE search_documents d SET live = x.live, dead_since = x.dead_since, liveness_dropped = x.dropped,
         owner_verified = x.owner_verified, uptime = x.uptime, price_drift = x.price_drift,
         payout_changed = x.payout_changed
    FROM x
   WHERE d.resource_id = x.id
     AND (d.live IS DISTINCT FROM x.live OR d.dead_since IS DISTINCT FROM x.dead_since
          OR d.liveness_dropped IS DISTINCT FROM x.dropped OR d.owner_verified IS DISTINCT FROM x.owner_verified
          OR d.uptime IS DISTINCT FROM x.uptime OR d.price_drift IS DISTINCT FROM x.price_drift
          OR d.payout_changed IS DISTINCT FROM x.payout_changed)
  RETURNING d.resource_id AS id`;

const BATCH_SCORES_SQL = scoresSql('d.resource_id = ANY(CAST($1 AS text[]))');

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * The trust block of a listing (issue #33) from its search document `d` and liveness row `l` (LEFT JOINed): the
 * columns, aliased as toTrust reads them. Shared by trustOf and the search statement (data/search-repository.ts),
 * which reads the blocks of its page in the same statement.
 */
export const TRUST_COLUMNS = `l.live, l.checked_at AS "checkedAt", l.latency_p50_ms AS p50, l.latency_p99_ms AS p99,
  d.uptime, d.owner_verified AS "ownerVerified", COALESCE(d.host_verified, false) AS "domainVerified",
  COALESCE(d.price_drift, false) AS "priceDrift", COALESCE(d.payout_changed, false) AS "payoutChanged",
  COALESCE(d.price_outlier, false) AS "priceOutlier", COALESCE(d.unique_payers, 0) AS payers,
  COALESCE(d.settlement_count, 0) AS calls, d.last_payment_at IS NOT NULL AS settled,
  COALESCE(d.self_dealt, false) AS "selfDealing",
  COALESCE(d.live IS FALSE OR d.price_drift OR d.payout_changed OR d.price_outlier OR d.self_dealt, false) AS demoted`;

/** A row carrying TRUST_COLUMNS as a trust block. */
export function toTrust(r: Row): Trust {
  const p50 = num(r.p50);
  const p99 = num(r.p99);
  const uptime = num(r.uptime);
  return {
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
  };
}

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
    observedAmount: r.observedAmount ? stroopsColumn(r.observedAmount) : null,
  };
}

function toTarget(r: Row): LivenessTarget {
  return {
    id: r.id as string,
    type: r.type as LivenessTarget['type'],
    url: r.url as string,
    host: (r.host as string | null) ?? (r.url as string),
    network: r.network as string,
    payTo: r.payTo as string,
    assetCode: r.assetCode as string,
    assetIssuer: r.assetIssuer as string,
    amount: stroopsColumn(r.amount),
    toolName: (r.toolName as string | null) ?? null,
    state: toState(r),
    knownDrift: (r.drift as Array<{ kind: 'price' | 'payout'; observed: string }>) ?? [],
    claim: String(r.claim),
  };
}

/** Kinds the live answer still differs in from the listing (new or known drifts): those drifts stay open. */
function stillDiffers(o: ProbeOutcome): string[] {
  const kinds = new Set(o.drift.map((d) => d.kind));
  if (o.obs.amount !== null && o.obs.amount !== o.target.amount) kinds.add('price');
  if (o.obs.payTo !== null && o.obs.payTo !== o.target.payTo) kinds.add('payout');
  return [...kinds];
}

export function createTrustRepository(db: Sequelize): TrustRepository {
  return {
    async claimDue(limit, now, leaseUntil) {
      const ids: string[] = [];
      const steps: Array<[string, (n: number) => unknown[]]> = [
        [claimSql(true), (n) => [n, now, leaseUntil]],
        [CLAIM_FRESH_SQL, (n) => [n, leaseUntil]],
        [claimSql(false), (n) => [n, now, leaseUntil]],
      ];
      for (const [sql, params] of steps) {
        if (ids.length >= limit) break;
        const { rows } = await pgQuery<{ id: string }>(db, sql, params(limit - ids.length));
        ids.push(...rows.map((r) => r.id));
      }
      if (ids.length === 0) return [];
      const { rows } = await pgQuery<Row>(db, TARGETS_SQL, [ids]);
      const byId = new Map(rows.map((r) => [r.id as string, r]));
      // Claim order kept (suspects, never probed, longest overdue).
      return ids.flatMap((id) => {
        const r = byId.get(id);
        return r ? [toTarget(r)] : [];
      });
    },

    async release(targets, at) {
      if (targets.length === 0) return;
      await pgQuery(
        db,
        `UPDATE resource_liveness l SET next_check_at = $3
           FROM unnest(CAST($1 AS text[]), CAST($2 AS bigint[])) AS k(id, claim)
          WHERE l.resource_id = k.id AND l.claim = k.claim`,
        [targets.map((t) => t.id), targets.map((t) => t.claim), at],
      );
    },

    async recordBatch(outcomes) {
      if (outcomes.length === 0) return { written: [], flagsChanged: 0 };
      const col = <T>(f: (o: ProbeOutcome) => T) => outcomes.map(f);
      const drifts = outcomes.flatMap((o) => o.drift.map((d) => ({ id: o.target.id, ...d })));
      return db.transaction(async (transaction) => {
        const run = async (sql: string, bind: unknown[]) =>
          ((await db.query(sql, { bind, transaction })) as [Array<{ id: string }>, unknown])[0];
        const written = (
          await run(RECORD_BATCH_SQL, [
            col((o) => o.target.id),
            col((o) => o.target.claim),
            col((o) => o.target.host),
            col((o) => o.state.live),
            col((o) => o.state.reason),
            col((o) => o.state.checkedAt),
            col((o) => o.state.nextCheckAt),
            col((o) => o.state.deadSince),
            col((o) => o.state.consecutiveFailures),
            col((o) => `{${o.state.latenciesMs.map((v) => Math.round(v)).join(',')}}`),
            col((o) => o.state.p50),
            col((o) => o.state.p99),
            col((o) => o.state.observedPayTo),
            // observed_amount is an unscaled NUMERIC: written in the shortest form, as before Stroops.
            col((o) => (o.state.observedAmount === null ? null : formatAmount(o.state.observedAmount))),
            col((o) => o.obs.live),
            col((o) => (o.obs.live ? stillDiffers(o).join(',') : null)),
            drifts.map((d) => d.id),
            drifts.map((d) => d.kind),
            drifts.map((d) => d.listed),
            drifts.map((d) => d.observed),
          ])
        ).map((r) => r.id);
        if (written.length === 0) return { written, flagsChanged: 0 };
        const dropped = new Map(outcomes.map((o) => [o.target.id, o.state.dropped]));
        const changed = (await run(FLAGS_SQL, [written, written.map((id) => dropped.get(id) ?? false)])).map(
          (r) => r.id,
        );
        // The flags move the static score (the demotion) and the postings' ranks: rewritten when they changed.
        if (changed.length > 0) await run(BATCH_SCORES_SQL, [changed]);
        return { written, flagsChanged: changed.length };
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
        `SELECT r.id, ${TRUST_COLUMNS}
           FROM unnest(CAST($1 AS text[])) AS k(id) JOIN resources r ON r.id = k.id
           LEFT JOIN search_documents d ON d.resource_id = r.id
           LEFT JOIN resource_liveness l ON l.resource_id = r.id`,
        [resourceIds],
      );
      for (const r of rows) out.set(r.id as string, toTrust(r));
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
