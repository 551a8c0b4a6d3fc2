import { Keypair } from '@stellar/stellar-sdk';
import { QueryTypes, type Sequelize } from 'sequelize';
import { newId } from '../domain/ids';
import type { NetworkHealthRecord } from '../domain/operations/network-health';
import type {
  ConformanceCheck,
  ConformanceRun,
  ConformanceRunStore,
  ProbeTarget,
  ResourceConformance,
} from '../domain/conformance/types';

/** Network health records, conformance runs, resource probes and the public stats queries (migration 0008). */
export interface OperationsRepository extends ConformanceRunStore {
  networkHealth(network: string): Promise<NetworkHealthRecord | null>;
  allNetworkHealth(): Promise<NetworkHealthRecord[]>;
  saveNetworkHealth(r: NetworkHealthRecord): Promise<void>;
  settlementStats(network: string): Promise<{ settled: number; latestHashes: string[] }>;
  deadLetters(): Promise<Record<string, number>>;
  /**
   * The conformance runner's own seller and resource on a local network (created once): the local cycle settles
   * against it. Inserted without a catalog event, so it is never indexed into discovery, and never probed.
   */
  ensureConformanceResource(
    network: string,
    asset: { code: string; issuer: string },
    amount: string,
  ): Promise<{ resourceId: string; payTo: string }>;
}

/** The domain of the conformance runner's own seller (a reserved TLD: nothing answers there). */
export const CONFORMANCE_SELLER_DOMAIN = 'conformance-runner.invalid';

type Row = Record<string, unknown>;
const date = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(v as string));

function toHealth(r: Row): NetworkHealthRecord {
  return {
    network: r.network as string,
    rpcUp: r.rpc_up as boolean,
    rpcHealthy: r.rpc_healthy as boolean,
    latencyMs: r.latency_ms === null ? null : Number(r.latency_ms),
    latestLedger: r.latest_ledger === null ? null : Number(r.latest_ledger),
    ledgerAdvancedAt: date(r.ledger_advanced_at),
    consecutiveErrors: Number(r.consecutive_errors),
    checkedAt: new Date(r.checked_at as string),
  };
}

function toRun(r: Row): ConformanceRun {
  return {
    id: r.id as string,
    network: r.network as string,
    trigger: r.trigger as ConformanceRun['trigger'],
    status: r.status as ConformanceRun['status'],
    evidence: r.evidence as string,
    checks: (r.checks ?? []) as ConformanceCheck[],
    createdAt: new Date(r.created_at as string),
    startedAt: date(r.started_at),
    finishedAt: date(r.finished_at),
  };
}

export function createOperationsRepository(db: Sequelize): OperationsRepository {
  const select = <T extends object = Row>(sql: string, replacements: Record<string, unknown> = {}) =>
    db.query<T>(sql, { replacements, type: QueryTypes.SELECT });

  return {
    async networkHealth(network) {
      const [row] = await select('SELECT * FROM network_health WHERE network = :network', { network });
      return row ? toHealth(row) : null;
    },
    async allNetworkHealth() {
      return (await select('SELECT * FROM network_health ORDER BY network')).map(toHealth);
    },
    async saveNetworkHealth(r) {
      await db.query(
        `INSERT INTO network_health (network, rpc_up, rpc_healthy, latency_ms, latest_ledger, ledger_advanced_at,
          consecutive_errors, checked_at)
         VALUES (:network, :rpcUp, :rpcHealthy, :latencyMs, :latestLedger, :ledgerAdvancedAt,
           :consecutiveErrors, :checkedAt)
         ON CONFLICT (network) DO UPDATE SET rpc_up = EXCLUDED.rpc_up, rpc_healthy =
           EXCLUDED.rpc_healthy, latency_ms = EXCLUDED.latency_ms,
           latest_ledger = EXCLUDED.latest_ledger, ledger_advanced_at = EXCLUDED.ledger_advanced_at,
           consecutive_errors = EXCLUDED.consecutive_errors, checked_at = EXCLUDED.checked_at`,
        { replacements: { ...r } },
      );
    },

    async createRun(run) {
      await db.query(
        `INSERT INTO conformance_runs (id, network, trigger, status, evidence, checks, created_at)
         VALUES (:id, :network, :trigger, :status, :evidence, '[]'::jsonb, now())`,
        {
          replacements: {
            id: run.id,
            network: run.network,
            trigger: run.trigger,
            status: 'queued',
            evidence: run.evidence,
          },
        },
      );
      return (await this.findRun(run.id))!;
    },
    async startRun(id) {
      const [, n] = (await db.query(
        `UPDATE conformance_runs SET status = 'running', started_at = now() WHERE id = :id AND status = 'queued'`,
        { replacements: { id } },
      )) as [unknown, unknown];
      return Number((n as { rowCount?: number })?.rowCount ?? n) === 1;
    },
    async finishRun(id, status, checks) {
      await db.query(
        `UPDATE conformance_runs SET status = :status, checks = CAST(:checks AS jsonb), finished_at = now() ` +
          `WHERE id = :id`,
        {
          replacements: { id, status, checks: JSON.stringify(checks) },
        },
      );
    },
    async findRun(id) {
      const [row] = await select('SELECT * FROM conformance_runs WHERE id = :id', { id });
      return row ? toRun(row) : null;
    },
    async listRuns(limit, before) {
      const rows = await select(
        `SELECT * FROM conformance_runs WHERE (:before = '' OR id < :before) ORDER BY id DESC LIMIT :limit`,
        { limit, before: before ?? '' },
      );
      return rows.map(toRun);
    },
    async latestRuns() {
      const rows = await select(
        `SELECT DISTINCT ON (network) * FROM conformance_runs WHERE status IN ('passed', 'failed') ORDER BY ` +
          `network, id DESC`,
      );
      return rows.map(toRun);
    },
    async recoverStuckRuns(olderThanSeconds) {
      await db.query(
        `UPDATE conformance_runs SET status = 'failed', finished_at = now(),
           checks = checks || CAST(:interrupted AS jsonb)
         WHERE status IN ('queued', 'running') AND created_at < now() - make_interval(secs => :age)`,
        {
          replacements: {
            age: olderThanSeconds,
            interrupted: JSON.stringify([
              { name: 'run', outcome: 'failed', reason: 'INTERNAL_ERROR: the run did not finish (process stopped)' },
            ]),
          },
        },
      );
    },
    async probeTargets(network, limit) {
      return select<ProbeTarget>(
        `SELECT id, url, network, pay_to AS "payTo", asset_code AS "assetCode", asset_issuer AS "assetIssuer",
          amount::text AS amount
           FROM resources r WHERE status = 'active' AND type = 'http' AND network = :network
            AND NOT EXISTS (SELECT 1 FROM sellers s WHERE s.id = r.seller_id AND s.domain = :domain)
          ORDER BY id LIMIT :limit`,
        { network, limit, domain: CONFORMANCE_SELLER_DOMAIN },
      );
    },
    async recordProbe(resourceId, runId, passed, reason) {
      await db.query(
        'INSERT INTO resource_probes (resource_id, run_id, passed, reason) VALUES (:resourceId, :runId, ' +
          ':passed, :reason)',
        {
          replacements: { resourceId, runId, passed, reason },
        },
      );
    },
    async resourceConformance(resourceId) {
      const [row] = await select<{
        passed: boolean | null;
        reason: string | null;
        checked_at: string | null;
        uptime: number | null;
      }>(
        `SELECT l.passed, l.reason, l.checked_at,
                (SELECT avg(CASE WHEN p.passed THEN 1.0 ELSE 0.0 END)::float8 FROM resource_probes p
                  WHERE p.resource_id = :resourceId AND p.checked_at > now() - interval '7 days') AS uptime
           FROM (SELECT 1) one
           LEFT JOIN LATERAL (SELECT passed, reason, checked_at FROM resource_probes WHERE resource_id
             = :resourceId ORDER BY checked_at DESC, id DESC LIMIT 1) l ON true`,
        { resourceId },
      );
      const out: ResourceConformance = {
        state: row.passed === null ? 'unknown' : row.passed ? 'passing' : 'failing',
        checkedAt: date(row.checked_at),
        reason: row.reason,
        uptime: row.uptime === null ? null : Number(row.uptime),
      };
      return out;
    },

    async settlementStats(network) {
      // The conformance runner's own test settlements (its seller, CONFORMANCE_SELLER_DOMAIN) are not marketplace
      // traffic.
      const notRunner = `NOT EXISTS (SELECT 1 FROM payment_attempts a JOIN sellers s ON s.id = a.seller_id
                          WHERE a.id = st.payment_attempt_id AND s.domain = :domain)`;
      const [count] = await select<{ n: string }>(
        `SELECT count(*) AS n FROM settlements st WHERE network = :network AND status = 'settled' AND ${notRunner}`,
        {
          network,
          domain: CONFORMANCE_SELLER_DOMAIN,
        },
      );
      const latest = await select<{ hash: string }>(
        `SELECT transaction_hash AS hash FROM settlements st WHERE network = :network AND status = 'settled' AND
          ${notRunner}
          ORDER BY settled_at DESC NULLS LAST, id DESC LIMIT 5`,
        { network, domain: CONFORMANCE_SELLER_DOMAIN },
      );
      return { settled: Number(count.n), latestHashes: latest.map((l) => l.hash) };
    },
    async ensureConformanceResource(network, asset, amount) {
      return db.transaction(async (transaction) => {
        await db.query('SELECT pg_advisory_xact_lock(hashtext(:key))', {
          replacements: { key: `conformance:${network}` },
          transaction,
        });
        const [found] = await db.query<{ id: string; pay_to: string }>(
          `SELECT r.id, r.pay_to FROM resources r JOIN sellers s ON s.id = r.seller_id
            WHERE s.domain = :domain AND r.network = :network AND r.status = 'active' AND r.asset_code
              = :code AND r.asset_issuer = :issuer AND r.amount = CAST(:amount AS numeric)
            ORDER BY r.id LIMIT 1`,
          {
            replacements: {
              domain: CONFORMANCE_SELLER_DOMAIN,
              network,
              code: asset.code,
              issuer: asset.issuer,
              amount,
            },
            type: QueryTypes.SELECT,
            transaction,
          },
        );
        if (found) return { resourceId: found.id, payTo: found.pay_to };
        const payTo = Keypair.random().publicKey(); // receives only: no secret is kept
        const sellerId = newId('seller');
        const resourceId = newId('resource');
        const versionId = newId('version');
        const url = `https://${CONFORMANCE_SELLER_DOMAIN}/settle`;
        const schema = JSON.stringify({ type: 'object' });
        const r = {
          sellerId,
          resourceId,
          versionId,
          payTo,
          network,
          code: asset.code,
          issuer: asset.issuer,
          amount,
          url,
          schema,
          domain: CONFORMANCE_SELLER_DOMAIN,
          name: 'Conformance runner (local simulation)',
          description: 'The conformance runner settles its own test payments against this resource. Not discoverable.',
        };
        await db.query(
          `INSERT INTO sellers (id, display_name, wallet_address, domain) VALUES (:sellerId, 'Conformance ` +
            `runner', :payTo, :domain)`,
          { replacements: r, transaction },
        );
        await db.query(
          `INSERT INTO resources (id, seller_id, current_version_id, version, type, name, description, url,
            route_template, network, pay_to, asset_code, asset_issuer, amount, input_schema, output_schema,
            extensions, status)
           VALUES (:resourceId, :sellerId, :versionId, 1, 'http', :name, :description, :url, '/settle',
             :network, :payTo, :code, :issuer, CAST(:amount AS numeric), CAST(:schema AS jsonb), CAST(:schema AS
             jsonb), '{}'::jsonb, 'active')`,
          { replacements: r, transaction },
        );
        await db.query(
          `INSERT INTO resource_versions (id, resource_id, version, name, description, url, route_template,
            network, pay_to, asset_code, asset_issuer, amount, input_schema, output_schema, extensions,
            seller_domain)
           VALUES (:versionId, :resourceId, 1, :name, :description, :url, '/settle', :network, :payTo,
             :code, :issuer, CAST(:amount AS numeric), CAST(:schema AS jsonb), CAST(:schema AS jsonb), '{}'::jsonb,
             :domain)`,
          { replacements: r, transaction },
        );
        return { resourceId, payTo };
      });
    },

    async deadLetters() {
      const rows = await select<{ worker: string; n: string }>(
        'SELECT worker, count(*) AS n FROM dead_letter_jobs GROUP BY worker',
      );
      return Object.fromEntries(rows.map((r) => [r.worker, Number(r.n)]));
    },
  };
}
