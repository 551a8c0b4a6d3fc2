import type { Migration } from './types';

/**
 * Bazaar v2 (issue #30): an observed resource keeps the service metadata its payment's `resource` carried
 * (`serviceName`, `tags`, `iconUrl`, each soft-dropped when invalid: domain/discovery/bazaar.ts
 * `sanitizeServiceMetadata`), the extension keys its payload echoed (the `extensions` filter of the Bazaar list), and
 * whether it was learned on a loopback host under LOCAL_DEV_DOMAINS (`local_dev`: listed only while that switch is
 * on, never on a deployment).
 */
export const migration: Migration = {
  name: '0085-bazaar-v2-metadata',
  async up(q) {
    await q(`
      ALTER TABLE observed_resources
        ADD COLUMN service_name text CHECK (length(service_name) <= 32),
        ADD COLUMN tags text[] NOT NULL DEFAULT '{}',
        ADD COLUMN icon_url text CHECK (length(icon_url) <= 2048),
        ADD COLUMN extension_names text[] NOT NULL DEFAULT '{bazaar}',
        ADD COLUMN local_dev boolean NOT NULL DEFAULT false;
    `);
  },
};
