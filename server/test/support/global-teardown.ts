import type { EmbeddedDatabase } from '../../src/data/embedded-database';

export default async function globalTeardown(): Promise<void> {
  const db = (globalThis as { __EMBEDDED_DB__?: EmbeddedDatabase }).__EMBEDDED_DB__;
  if (db) await db.stop();
}
