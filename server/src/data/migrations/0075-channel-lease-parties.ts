import type { Migration } from './types';

/**
 * Fair capacity (issue #29 item 12): a channel lease names the party it was taken for (the seller paid, the payer and
 * the calling client), so the take statement counts each party's busy channels across every process and refuses a
 * party at its share. The columns are stamped at take and left in place at release: only busy rows (held or pinned)
 * are counted, so a free row's old party counts for nothing.
 */
export const migration: Migration = {
  name: '0075-channel-lease-parties',
  async up(q) {
    await q(`
      ALTER TABLE channel_leases ADD COLUMN seller_id text, ADD COLUMN payer text, ADD COLUMN client text;
    `);
  },
};
