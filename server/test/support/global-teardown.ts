import type { EmbeddedDatabase } from '../../src/data/embedded-database';
import { dropTemplateDatabase } from './database';

export default async function globalTeardown(): Promise<void> {
  const adminUrl = process.env.TEST_ADMIN_DATABASE_URL;
  const template = process.env.TEST_TEMPLATE_DATABASE;
  const db = (globalThis as { __EMBEDDED_DB__?: EmbeddedDatabase }).__EMBEDDED_DB__;
  if (db) await db.stop();
  else if (adminUrl && template) await dropTemplateDatabase(adminUrl, template);
}
