import type { Migration } from './types';

/** Reserved for the facilitator area: its tables, indexes and constraints. */
export const migration: Migration = {
  name: '0005-facilitator',
  async up() {
    // nothing yet
  },
};
