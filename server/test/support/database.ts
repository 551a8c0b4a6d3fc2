import crypto from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '../../src/data/database';

/**
 * A fresh, migrated database on the test PostgreSQL (embedded, or DATABASE_URL's server) for one test file, so
 * files never see each other's rows. Dropped by `drop()`.
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.TEST_ADMIN_DATABASE_URL;
  if (!adminUrl) throw new Error('TEST_ADMIN_DATABASE_URL is unset: run the tests through jest (globalSetup)');
  const name = `test_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
