import crypto from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '../../src/data/database';

/**
 * The test databases. globalSetup (global-setup.ts) migrates ONE template database per Jest run
 * (TEST_TEMPLATE_DATABASE); each test file then clones it with `CREATE DATABASE ... TEMPLATE`, which copies the
 * migrated schema in milliseconds instead of running every migration again. Without a template (a script that sets
 * TEST_ADMIN_DATABASE_URL itself), the database is created empty and migrated.
 */

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(adminUrl: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: adminUrl });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Creates the run's template database and migrates it (globalSetup). Returns its name. */
export async function createTemplateDatabase(adminUrl: string): Promise<string> {
  const name = `test_template_${crypto.randomBytes(6).toString('hex')}`;
  await withAdmin(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  await migrate(databaseUrl(adminUrl, name));
  // Nobody connects to the template again: a clone fails while any session is connected to its source.
  await withAdmin(adminUrl, (c) => c.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`));
  return name;
}

/** Drops the run's template database (globalTeardown; matters when DATABASE_URL is an external server). */
export async function dropTemplateDatabase(adminUrl: string, name: string): Promise<void> {
  await withAdmin(adminUrl, async (c) => {
    await c.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE false`);
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

/**
 * How each file's clone is copied. PostgreSQL's default (WAL_LOG) copies the template block by block through the
 * write-ahead log; FILE_COPY copies its files and makes two checkpoints. global-setup.ts asks for FILE_COPY
 * (TEST_CLONE_STRATEGY) only where fsync is off, where those checkpoints write to the operating system and never
 * wait for the disk: there it cost PostgreSQL less CPU per file (see global-setup.ts). Same database either way.
 */
const CLONE_STRATEGY = process.env.TEST_CLONE_STRATEGY === 'FILE_COPY' ? ' STRATEGY FILE_COPY' : '';

async function cloneTemplate(admin: Client, name: string, template: string): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}${CLONE_STRATEGY}`);
      return;
    } catch (err) {
      // 55006 object_in_use: the migration's session on the template had not quite ended yet.
      if ((err as { code?: string }).code !== '55006' || attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * A fresh, migrated database on the test PostgreSQL (embedded, or DATABASE_URL's server) for one test file, so
 * files never see each other's rows. Dropped by `drop()` on DATABASE_URL's server; on the run's embedded server
 * (TEST_KEEP_DATABASES, set by global-setup.ts) `drop()` leaves it, as the whole cluster is deleted at the end of the
 * run: a drop per file was PostgreSQL CPU spent on nothing a test can see.
 */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.TEST_ADMIN_DATABASE_URL;
  if (!adminUrl) throw new Error('TEST_ADMIN_DATABASE_URL is unset: run the tests through jest (globalSetup)');
  const template = process.env.TEST_TEMPLATE_DATABASE;
  const name = `test_${crypto.randomBytes(6).toString('hex')}`;
  await withAdmin(adminUrl, (admin) =>
    template ? cloneTemplate(admin, name, template) : admin.query(`CREATE DATABASE ${name}`).then(() => undefined),
  );
  const url = databaseUrl(adminUrl, name);
  if (!template) await migrate(url);
  return {
    url,
    async drop() {
      if (process.env.TEST_KEEP_DATABASES === '1') return;
      await withAdmin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}
