import type { Migration } from './types';

/**
 * Liveness at 100k listings (issue #33): the worker claims the listings it probes and writes their outcomes in batches.
 *
 * - `resource_liveness.claim`: bumped when a worker claims the row (its `next_check_at` pushed to the end of a lease)
 *   and again when an outcome is written; an outcome is written only while the row still carries the claim it was
 *   probed under (compare-and-set), so two processes never write or count one listing's probe twice, and a probe of
 *   a process that died before writing is simply probed again once the lease ends.
 * - `resource_liveness_suspect_idx`: listings that failed their last probe but are not yet demoted are re-probed
 *   first (their retry jumps the queue of overdue live listings), so demotion does not wait a second full cycle.
 */
export const migration: Migration = {
  name: '0120-liveness-claims',
  async up(q) {
    await q(`
      ALTER TABLE resource_liveness ADD COLUMN claim bigint NOT NULL DEFAULT 0;
      CREATE INDEX resource_liveness_suspect_idx ON resource_liveness (next_check_at)
        WHERE consecutive_failures > 0 AND live IS NOT FALSE;
    `);
  },
};
