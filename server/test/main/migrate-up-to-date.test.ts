import { Client } from 'pg';
import { migrate } from '../../src/data/database';
import { MIGRATIONS } from '../../src/data/migrations';
import { createTestDatabase } from '../support/database';

/**
 * Every service process migrates at start (issue #31: the bench's and a cluster's processes find the database
 * migrated already). Then migrate answers from schema_migrations alone, without loading umzug, and applies nothing.
 */
describe('migrate on a database that is up to date', () => {
  let database: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database.drop());

  it('applies nothing and leaves every migration recorded once', async () => {
    expect(await migrate(database.url)).toEqual([]);
    expect(await migrate(database.url)).toEqual([]);
    const client = new Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
      expect(rows.map((r) => r.name).sort()).toEqual(MIGRATIONS.map((m) => m.name).sort());
    } finally {
      await client.end();
    }
  });
});
