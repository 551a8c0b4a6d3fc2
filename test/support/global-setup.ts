import path from 'node:path';
import crypto from 'node:crypto';
import { startEmbeddedDatabase } from '../../server/src/data/embedded-database';

/**
 * Like the server's globalSetup, but the embedded PostgreSQL gets its own data folder per run, so these tests can
 * run while another suite (the server's, another SDK's) holds the server's fixed `.data/test-postgres` folder.
 * DATABASE_URL, when set, is used instead.
 */
const SUITE = 'e2e';

export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) {
    process.env.TEST_ADMIN_DATABASE_URL = process.env.DATABASE_URL;
    return;
  }
  const dataDir = path.resolve(__dirname, '../../.data', `test-postgres-${SUITE}-${crypto.randomBytes(4).toString('hex')}`);
  const db = await startEmbeddedDatabase({ dataDir, persistent: false });
  process.env.TEST_ADMIN_DATABASE_URL = db.adminUrl;
  (globalThis as { __EMBEDDED_DB__?: unknown }).__EMBEDDED_DB__ = db;
}
