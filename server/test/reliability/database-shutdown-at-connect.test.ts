import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createSequelize } from '../../src/data/database';

/**
 * A PostgreSQL that begins shutting down at the very moment a new connection's start-up completes: its last start-up
 * message (ReadyForQuery) and the shutdown's FATAL 57P01 arrive in one read. Seen under load in
 * reliability/database-restart (the pool reconnecting while the database stopped): pg emitted the error before
 * Sequelize had attached its listener, and the unheard 'error' event crashed the process. A real PostgreSQL cannot be
 * timed to that byte, so this speaks the wire protocol's few start-up messages itself.
 */
function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

function shutdownAtStartup(): Buffer {
  const field = (code: string, value: string) => Buffer.from(`${code}${value}\0`, 'utf8');
  return Buffer.concat([
    message('R', Buffer.from([0, 0, 0, 0])), // AuthenticationOk
    message('Z', Buffer.from('I')), // ReadyForQuery: the start-up is done
    message(
      'E', // ErrorResponse, in the same write
      Buffer.concat([
        field('S', 'FATAL'),
        field('V', 'FATAL'),
        field('C', '57P01'),
        field('M', 'terminating connection due to administrator command'),
        Buffer.from([0]),
      ]),
    ),
  ]);
}

describe('a database shutting down as a connection starts', () => {
  let server: net.Server;
  let url: string;
  let connections = 0;

  beforeAll(async () => {
    server = net.createServer((socket) => {
      connections += 1;
      socket.on('error', () => undefined);
      socket.once('data', () => socket.end(shutdownAtStartup())); // the client's StartupMessage
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `postgres://user:pw@127.0.0.1:${(server.address() as AddressInfo).port}/db`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('the query fails with a connection error and the process keeps running (the error is heard)', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    const db = createSequelize(url, { poolMax: 1 });
    try {
      for (let i = 0; i < 3; i++) {
        await expect(db.query('SELECT 1')).rejects.toThrow();
        await new Promise((resolve) => setTimeout(resolve, 20)); // let any late 'error' event fire
      }
    } finally {
      process.off('uncaughtException', onUncaught);
      await db.close().catch(() => undefined);
    }
    expect(connections).toBeGreaterThanOrEqual(3);
    expect(uncaught.map(String)).toEqual([]);
  });
});
