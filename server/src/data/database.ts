import pg from 'pg';
import { Sequelize, QueryTypes, Transaction } from 'sequelize';
import { MIGRATIONS } from './migrations';

export type Db = Sequelize;
export { QueryTypes, Transaction };

/** Default bound on one SQL statement of the service (DATABASE_STATEMENT_TIMEOUT_MS); 0 turns it off. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;

/** Default size of the service's connection pool per process (DATABASE_POOL_MAX), and its bound. */
export const DEFAULT_POOL_MAX = 10;
export const MAX_POOL_MAX = 100;
/**
 * How long a pooled connection may sit unused before the pool closes it. The pool lends its most recently used
 * connection first, so under a steady trickle one connection serves and the others go idle: with Sequelize's default
 * 10 s they were closed during any lull (or even under steady load) and the next burst opened them again on the
 * request path: a PostgreSQL backend's fork, log-in and first statements, 40–90 ms each and ~300 ms for seven at once
 * on this loaded 2-core machine (scripts/bench/PROFILE.md "Verify (session 7)"). Ten minutes keeps the connections a
 * burst needed for the next one; a quiet process still gives them back.
 */
export const POOL_IDLE_MS = 10 * 60_000;

/**
 * pg's Client with an 'error' listener from its first moment. Sequelize attaches its own listener (which marks the
 * connection invalid and destroys it) only when the connection's start-up has finished, one microtask later; an error
 * PostgreSQL sends in the same read as the end of that start-up (a shutdown beginning: 57P01) is emitted before it,
 * to nobody, and an unheard 'error' event crashes the process (seen under load in reliability/database-restart). This
 * listener marks the connection invalid, so the pool's validation throws it away instead of lending it out.
 */
class ListenedClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => {
      (this as { _invalid?: boolean })._invalid = true;
    });
  }
}
const PG_WITH_LISTENED_CLIENTS = { ...pg, Client: ListenedClient };

/**
 * The service's connection pool (`poolMax` connections, default DEFAULT_POOL_MAX, at most MAX_POOL_MAX). Every
 * connection carries `statement_timeout`, so no query (a slow search, a lock wait) can hold a connection longer
 * than that: PostgreSQL cancels it and the request answers an error instead of exhausting the pool. Migrations use
 * their own pool without the bound.
 */
export function createSequelize(
  databaseUrl: string,
  opts: { poolMax?: number; statementTimeoutMs?: number } = {},
): Sequelize {
  const statementTimeout = opts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  return new Sequelize(databaseUrl, {
    dialect: 'postgres',
    dialectModule: PG_WITH_LISTENED_CLIENTS,
    logging: false,
    pool: {
      max: Math.min(MAX_POOL_MAX, Math.max(1, opts.poolMax ?? DEFAULT_POOL_MAX)),
      min: 0,
      idle: POOL_IDLE_MS,
      acquire: 30_000,
    },
    dialectOptions: {
      application_name: 'paid-api-marketplace',
      ...(statementTimeout > 0 ? { statement_timeout: statementTimeout } : {}),
    },
  });
}

/**
 * Applies pending migrations. Safe to run from several processes at once: a PostgreSQL advisory lock, held on the
 * single connection of a private pool, serialises them. When every migration is already recorded (every start but
 * the first, and every service process a cluster primary or a bench migrated for), it answers at once without
 * loading umzug: its command-line helpers (@rushstack/ts-command-line, node-core-library, z-schema) cost each
 * process ~8 MiB of resident memory it would never use again (issue #31).
 */
export async function migrate(databaseUrl: string): Promise<string[]> {
  const db = createSequelize(databaseUrl, { poolMax: 1, statementTimeoutMs: 0 });
  if (await allApplied(db)) {
    await db.close();
    return [];
  }
  const { Umzug, SequelizeStorage } = await import('umzug');
  const umzug = new Umzug({
    migrations: MIGRATIONS.map((m) => ({
      name: m.name,
      up: async () => {
        await db.transaction(async (transaction) => {
          await m.up((sql) => db.query(sql, { transaction }));
        });
      },
    })),
    storage: new SequelizeStorage({ sequelize: db, tableName: 'schema_migrations' }),
    logger: undefined,
  });
  await db.query('SELECT pg_advisory_lock(815200401)');
  try {
    const applied = await umzug.up();
    return applied.map((m) => m.name);
  } finally {
    await db.query('SELECT pg_advisory_unlock(815200401)').catch(() => undefined);
    await db.close();
  }
}

/** Whether every migration of this build is recorded in schema_migrations (false when the table is missing). */
async function allApplied(db: Sequelize): Promise<boolean> {
  try {
    const rows = await db.query<{ name: string }>('SELECT name FROM schema_migrations', { type: QueryTypes.SELECT });
    const done = new Set(rows.map((r) => r.name));
    return MIGRATIONS.every((m) => done.has(m.name));
  } catch {
    return false;
  }
}
