import type { Migration } from './types';

/**
 * Trust signals (issue #33): measured liveness, owner and price drift, honest prices; ranking strategy
 * pg-fts-recall-v5 (domain/discovery/ranking.ts).
 *
 * - `resource_liveness`: one row per probed resource (the liveness worker, jobs/liveness-worker.ts): the last probe's
 *   outcome, when the next is due, since when it has been dead, the last 50 latencies and their p50/p99, the payTo
 *   and amount the live 402 asked. `resource_liveness_days` counts probes and passes per day (7 are read for
 *   uptime7d; one row per resource and day, whatever the probe rate).
 * - `resource_drift`: a live 402 asking another price or payout address than the listing, recorded with the time it
 *   was first seen. Open (neither confirmed by the seller with its key nor resolved by the listing matching again)
 *   it flags the listing and demotes it.
 * - `search_documents` carries the flags the ranking and the filters read (`live`, `dead_since`,
 *   `liveness_dropped`, `owner_verified`, `price_drift`, `payout_changed`, `price_outlier`), written by the
 *   liveness worker, and `self_dealt` (most of its settled calls came from wallets its seller controls), written with
 *   the other signals. The static score (written from RANKING_WEIGHTS by data/search-index-repository.ts since
 *   migration 0100) subtracts RANKING_WEIGHTS.demotion's 4 from a listing that is dead, drifted, priced as a decoy or
 *   self-dealt, so it ranks below every listing that is not, on any host tier.
 */
export const migration: Migration = {
  name: '0110-trust-signals',
  async up(q) {
    await q(`
      CREATE TABLE resource_liveness (
        resource_id text PRIMARY KEY REFERENCES resources(id) ON DELETE CASCADE,
        host text NOT NULL,
        live boolean,
        reason text,
        checked_at timestamptz,
        next_check_at timestamptz NOT NULL DEFAULT now(),
        dead_since timestamptz,
        consecutive_failures integer NOT NULL DEFAULT 0,
        latencies_ms integer[] NOT NULL DEFAULT '{}',
        latency_p50_ms double precision,
        latency_p99_ms double precision,
        observed_pay_to text,
        observed_amount numeric
      );
      CREATE INDEX resource_liveness_due_idx ON resource_liveness (next_check_at);

      CREATE TABLE resource_liveness_days (
        resource_id text NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
        day date NOT NULL,
        probes integer NOT NULL DEFAULT 0,
        passed integer NOT NULL DEFAULT 0,
        PRIMARY KEY (resource_id, day)
      );

      CREATE TABLE resource_drift (
        id bigserial PRIMARY KEY,
        resource_id text NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('price', 'payout')),
        listed text NOT NULL,
        observed text NOT NULL,
        detected_at timestamptz NOT NULL DEFAULT now(),
        confirmed_at timestamptz,
        confirmed_by text,
        resolved_at timestamptz
      );
      CREATE UNIQUE INDEX resource_drift_open_uq ON resource_drift (resource_id, kind) WHERE confirmed_at IS
        NULL AND resolved_at IS NULL;
      CREATE INDEX resource_drift_resource_idx ON resource_drift (resource_id, detected_at DESC);

      -- Self-dealing checks of the usage signal look payments up by payer and payee.
      CREATE INDEX payment_attempts_settled_parties_idx ON payment_attempts (payer, pay_to) WHERE status = 'settled';

      ALTER TABLE search_documents
        ADD COLUMN live boolean,
        ADD COLUMN dead_since timestamptz,
        ADD COLUMN liveness_dropped boolean NOT NULL DEFAULT false,
        ADD COLUMN owner_verified boolean,
        ADD COLUMN price_drift boolean NOT NULL DEFAULT false,
        ADD COLUMN payout_changed boolean NOT NULL DEFAULT false,
        ADD COLUMN price_outlier boolean NOT NULL DEFAULT false,
        ADD COLUMN self_dealt boolean NOT NULL DEFAULT false;

    `);
  },
};
