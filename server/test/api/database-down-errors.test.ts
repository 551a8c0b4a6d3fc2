import express from 'express';
import request from 'supertest';
import { DatabaseError as PgDatabaseError } from 'pg';
import { ConnectionRefusedError, DatabaseError } from 'sequelize';
import { errorHandler } from '../../src/http/error-handler';
import { createLogger } from '../../src/logger';

/**
 * How the one error handler answers database failures that reach it from Sequelize's own queries (the real handler,
 * the real Sequelize error classes, wrapping pg-shaped errors as Sequelize wraps them): a connection that is gone is
 * 503 SERVICE_UNAVAILABLE with Retry-After, an SQL error is a 500, and neither shows internals. The live version of
 * this is reliability/database-restart.test.ts, which stops PostgreSQL under load; which of these errors a stop
 * raises depends on timing (a loaded machine sees resets), so each shape is pinned here.
 */
function appThrowing(err: Error) {
  const app = express();
  app.get('/boom', () => {
    throw err;
  });
  app.use(errorHandler(createLogger({ silent: true })));
  return app;
}

function pgError(message: string, code?: string): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

describe('database failures in the one envelope', () => {
  it.each([
    ['a socket reset mid-query (ECONNRESET, no SQLSTATE)', pgError('read ECONNRESET', 'ECONNRESET')],
    ['a write to a closed socket (EPIPE)', pgError('write EPIPE', 'EPIPE')],
    ['an administrator shutdown (57P01)', pgError('terminating connection due to administrator command', '57P01')],
    ['a database still starting (57P03)', pgError('the database system is starting up', '57P03')],
    ['a connection exception (class 08)', pgError('connection failure', '08006')],
    ['a socket closed with no code', pgError('Connection terminated unexpectedly')],
  ])('%s answers 503 SERVICE_UNAVAILABLE with Retry-After, showing no internals', async (_name, parent) => {
    const res = await request(appThrowing(new DatabaseError(parent as never))).get('/boom');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(JSON.stringify(res.body)).not.toMatch(/ECONNRESET|EPIPE|57P0|08006|terminat/);
  });

  it(
    "pg's own error, unwrapped (a new pooled connection's start-up statement cut by a shutdown, 57P01) answers 503 " +
      'SERVICE_UNAVAILABLE',
    async () => {
      const cut = new PgDatabaseError('terminating connection due to administrator command', 116, 'error');
      cut.code = '57P01';
      const res = await request(appThrowing(cut)).get('/boom');
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(JSON.stringify(res.body)).not.toMatch(/57P01|terminating/);
    },
  );

  it("pg's own SQL error, unwrapped (a unique violation) stays a 500", async () => {
    const sqlError = new PgDatabaseError('duplicate key value violates unique constraint', 90, 'error');
    sqlError.code = '23505';
    expect((await request(appThrowing(sqlError)).get('/boom')).status).toBe(500);
  });

  it('a refused connection answers 503 SERVICE_UNAVAILABLE', async () => {
    const res = await request(
      appThrowing(new ConnectionRefusedError(pgError('connect ECONNREFUSED', 'ECONNREFUSED'))),
    ).get('/boom');
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
  });

  it('an SQL error (a unique violation) is not a database outage: 500 INTERNAL_ERROR, no SQL shown', async () => {
    const res = await request(
      appThrowing(new DatabaseError(pgError('duplicate key value violates', '23505') as never)),
    ).get('/boom');
    expect(res.status).toBe(500);
    expect(res.body.ok).toBe(false);
    expect(JSON.stringify(res.body)).not.toMatch(/duplicate key|23505/);
  });
});
