import type { Migration } from './types';

/** Reserved for the discovery area: its tables, indexes and constraints. */
export const migration: Migration = {
  name: '0004-discovery',
  async up() {
    // nothing yet
  },
};
