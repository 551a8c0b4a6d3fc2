import { ConnectionError, type Sequelize } from 'sequelize';
import type { ClientBase, QueryResultRow } from 'pg';

/**
 * One parameterized statement on a connection from Sequelize's own pool (same settings: statement_timeout,
 * application_name, pool size), without Sequelize's query building and result mapping: for the few statements on
 * every request's path (idempotency, rate limiting, verify), where Sequelize cost more CPU than PostgreSQL did
 * (scripts/bench/PROFILE.md). A `name` makes it a prepared statement on each connection (parsed once per
 * connection). Rows come back as pg returns them (column names as in SQL, timestamptz as Date, bigint as string).
 *
 * A connection-level failure is thrown as Sequelize's ConnectionError (and the connection is discarded), so the
 * error handler answers 503 SERVICE_UNAVAILABLE as it does for Sequelize's own queries; an SQL error (with its
 * SQLSTATE `code`) is thrown as pg raised it.
 */
export async function pgQuery<R extends QueryResultRow = QueryResultRow>(db: Sequelize, text: string, values: unknown[], name?: string): Promise<{ rows: R[]; rowCount: number }> {
  const manager = db.connectionManager as unknown as {
    getConnection(options?: { type?: 'read' | 'write' }): Promise<ClientBase & { _invalid?: boolean }>;
    releaseConnection(connection: ClientBase): void;
  };
  const client = await manager.getConnection({ type: 'write' });
  try {
    const result = await client.query<R>(name ? { name, text, values } : { text, values });
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    // SQLSTATE class 08 (connection exception), 57P01–03 (admin shutdown, crash, cannot connect now), or no SQLSTATE
    // at all (socket closed, ECONNRESET): the connection is unusable.
    if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || code.startsWith('08') || /^57P0[123]$/.test(code)) {
      client._invalid = true;
      throw new ConnectionError(err as Error);
    }
    throw err;
  } finally {
    manager.releaseConnection(client);
  }
}
