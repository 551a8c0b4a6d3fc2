import type { EmbeddedDatabase } from '../../src/data/embedded-database';
import { dropTemplateDatabase } from './database';
import { writePostgresStats } from './postgres-stats';

export default async function globalTeardown(): Promise<void> {
  const adminUrl = process.env.TEST_ADMIN_DATABASE_URL;
  const template = process.env.TEST_TEMPLATE_DATABASE;
  const db = (globalThis as { __EMBEDDED_DB__?: EmbeddedDatabase }).__EMBEDDED_DB__;
  if (adminUrl) await writePostgresStats(adminUrl, process.env.TEST_POSTGRES_DATA_DIR);
  if (db) await db.stop();
  else if (adminUrl && template) await dropTemplateDatabase(adminUrl, template);
}
