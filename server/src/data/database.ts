import { Sequelize, QueryTypes, Transaction } from 'sequelize';
import { Umzug, SequelizeStorage } from 'umzug';
import { MIGRATIONS } from './migrations';

export type Db = Sequelize;
export { QueryTypes, Transaction };

export function createSequelize(databaseUrl: string, opts: { poolMax?: number } = {}): Sequelize {
  return new Sequelize(databaseUrl, {
    dialect: 'postgres',
    logging: false,
    pool: { max: opts.poolMax ?? 10, min: 0, idle: 10_000, acquire: 30_000 },
    dialectOptions: { application_name: 'paid-api-marketplace' },
  });
}

/**
 * Applies pending migrations. Safe to run from several processes at once: a PostgreSQL advisory lock, held on the
 * single connection of a private pool, serialises them.
 */
export async function migrate(databaseUrl: string): Promise<string[]> {
  const db = createSequelize(databaseUrl, { poolMax: 1 });
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
