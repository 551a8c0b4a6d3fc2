import path from 'node:path';
import crypto from 'node:crypto';
import { startEmbeddedDatabase } from '../../server/src/data/embedded-database';

/**
 * The globalSetup of the SDK and end-to-end suites (see test/jest.base.js). Like the server's, but the embedded
 * PostgreSQL gets its own data folder per run (named after the suite's folder), so these tests can run while
 * another suite holds the server's fixed `.data/test-postgres` folder. DATABASE_URL, when set, is used instead.
 */
export default async function globalSetup(_globalConfig: unknown, projectConfig: { rootDir: string }): Promise<void> {
  const suite = path.basename(projectConfig.rootDir); // sdk-buyer, sdk-seller, or test (the end-to-end suite)
  if (process.env.DATABASE_URL) {
    process.env.TEST_ADMIN_DATABASE_URL = process.env.DATABASE_URL;
    return;
  }
  const dataDir = path.resolve(__dirname, '../../.data', `test-postgres-${suite}-${crypto.randomBytes(4).toString('hex')}`);
  const db = await startEmbeddedDatabase({ dataDir, persistent: false });
  process.env.TEST_ADMIN_DATABASE_URL = db.adminUrl;
  (globalThis as { __EMBEDDED_DB__?: unknown }).__EMBEDDED_DB__ = db;
}
