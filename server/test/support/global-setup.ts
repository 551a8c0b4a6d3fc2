import path from 'node:path';
import { startEmbeddedDatabase } from '../../src/data/embedded-database';

/**
 * Starts one real PostgreSQL for the whole test run unless DATABASE_URL points at one. Each test file then makes
 * its own database on it (see test/support/database.ts), so files never see each other's rows.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) {
    process.env.TEST_ADMIN_DATABASE_URL = process.env.DATABASE_URL;
    return;
  }
  const db = await startEmbeddedDatabase({
    dataDir: path.resolve(__dirname, '../../../.data/test-postgres'),
    persistent: false,
  });
  process.env.TEST_ADMIN_DATABASE_URL = db.adminUrl;
  (globalThis as { __EMBEDDED_DB__?: unknown }).__EMBEDDED_DB__ = db;
}
