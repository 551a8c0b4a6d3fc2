import path from 'node:path';
import crypto from 'node:crypto';
import { startEmbeddedDatabase } from '../../src/data/embedded-database';
import { createTemplateDatabase } from './database';

/**
 * The globalSetup of every Jest suite (server, both SDKs, end-to-end; see test/jest.base.js). Starts one real
 * PostgreSQL for the run unless DATABASE_URL points at one, then migrates one template database on it
 * (TEST_TEMPLATE_DATABASE) that each test file clones (see database.ts), so files never see each other's rows and
 * the migrations run once per run, not once per file.
 *
 * The embedded server gets its own data folder per run (named after the suite's folder), so suites (and the
 * server suite's parallel and serial halves) never share one; its max_connections is raised for parallel workers
 * (each file's service opens pools). Durability settings stay as PostgreSQL ships them.
 */
export default async function globalSetup(_globalConfig: unknown, projectConfig: { rootDir: string }): Promise<void> {
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const suite = path.basename(projectConfig.rootDir); // server, sdk-buyer, sdk-seller, or test (end-to-end)
    const dataDir = path.resolve(
      __dirname,
      '../../../.data',
      `test-postgres-${suite}-${crypto.randomBytes(4).toString('hex')}`,
    );
    const db = await startEmbeddedDatabase({
      dataDir,
      persistent: false,
      settings: { max_connections: 500 },
    });
    (globalThis as { __EMBEDDED_DB__?: unknown }).__EMBEDDED_DB__ = db;
    adminUrl = db.adminUrl;
  }
  process.env.TEST_ADMIN_DATABASE_URL = adminUrl;
  process.env.TEST_TEMPLATE_DATABASE = await createTemplateDatabase(adminUrl);
}
