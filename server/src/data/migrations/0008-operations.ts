import type { Migration } from './types';

/**
 * Operations: the current health record of every network (written by the network-health worker, read by /health,
 * the dashboard and the settle fail-fast), conformance runs with their checks, and the per-resource probe history
 * that feeds the historical-uptime ranking signal.
 *
 * - `network_health` holds one row per network (the current record, not a history): `ledger_advanced_at` is when
 *   the observed ledger sequence last moved, so "stale" is `now() - ledger_advanced_at > 3 close intervals`.
 * - `conformance_runs.checks` is a JSONB array of {name, outcome, reason, resourceId?, durationMs}.
 * - `resource_probes` keeps one row per probe of a cataloged http resource (7 days are read for uptime).
 */
export const migration: Migration = {
  name: '0008-operations',
  async up(q) {
    await q(`
      CREATE TABLE network_health (
        network text PRIMARY KEY,
        rpc_up boolean NOT NULL,
        rpc_healthy boolean NOT NULL,
        latency_ms double precision,
        latest_ledger bigint,
        ledger_advanced_at timestamptz,
        consecutive_errors integer NOT NULL DEFAULT 0,
        reason text,
        checked_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE conformance_runs (
        id text PRIMARY KEY,
        network text NOT NULL,
        trigger text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
        status text NOT NULL CHECK (status IN ('queued', 'running', 'passed', 'failed')),
        evidence text NOT NULL,
        checks jsonb NOT NULL DEFAULT '[]'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz
      );
      CREATE INDEX conformance_runs_network_idx ON conformance_runs (network, id DESC);

      CREATE TABLE resource_probes (
        id bigserial PRIMARY KEY,
        resource_id text NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
        run_id text REFERENCES conformance_runs(id) ON DELETE SET NULL,
        passed boolean NOT NULL,
        reason text,
        checked_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX resource_probes_resource_idx ON resource_probes (resource_id, checked_at DESC);
    `);
  },
};
