import type { Migration } from './types';

/**
 * Jobs that failed their last retry. They are kept in PostgreSQL (the system of record) whichever job backend
 * Agenda runs on, so an operator can inspect and replay them.
 */
export const migration: Migration = {
  name: '0003-dead-letter-jobs',
  async up(q) {
    await q(`
      CREATE TABLE dead_letter_jobs (
        id bigserial PRIMARY KEY,
        worker text NOT NULL,
        data jsonb NOT NULL,
        error text NOT NULL,
        attempts integer NOT NULL,
        failed_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX dead_letter_jobs_worker_idx ON dead_letter_jobs (worker, failed_at DESC);
    `);
  },
};
