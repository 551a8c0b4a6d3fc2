import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Client } from 'pg';

/** An embedded PostgreSQL in a child process that a test can stop and start again on the same port and data. */
export interface OwnDatabase {
  adminUrl: string;
  port: number;
  urlFor(database: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startOwnDatabase(dataDir: string, port?: number): Promise<OwnDatabase> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      require.resolve('tsx/cli'),
      path.join(__dirname, 'embedded-db-process.ts'),
      dataDir,
      ...(port ? [String(port)] : []),
    ],
    {
      cwd: path.resolve(__dirname, '../../..'),
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let errText = '';
  child.stderr!.on('data', (d) => (errText += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const adminUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { adminUrl: string }).adminUrl);
    });
    void exited.then((code) => reject(new Error(`embedded database exited (${code}): ${errText.slice(0, 500)}`)));
  });
  return {
    adminUrl,
    port: Number(new URL(adminUrl).port),
    async urlFor(database: string) {
      const c = new Client({ connectionString: adminUrl });
      await c.connect();
      try {
        const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
        if (exists.rowCount === 0) await c.query(`CREATE DATABASE "${database.replace(/"/g, '')}"`);
      } finally {
        await c.end();
      }
      const url = new URL(adminUrl);
      url.pathname = `/${database}`;
      return url.toString();
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.stdin!.write('stop\n');
      await exited;
    },
  };
}
