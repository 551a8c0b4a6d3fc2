import { ConnectionError, type Sequelize } from 'sequelize';
import type { ClientBase, QueryResultRow } from 'pg';

/** Sequelize's published connection type is `object`; on the postgres dialect it is a pg client. */
function isPgClient(connection: object): connection is ClientBase {
  return typeof (connection as Partial<ClientBase>).query === 'function';
}

/** SQLSTATE class 08 (connection exception), 57P01–03 (admin shutdown, crash, cannot connect now), a Node system
 * error (ECONNRESET, EPIPE: no SQLSTATE class starts with E, and EPIPE has a SQLSTATE's length), or no SQLSTATE at all
 * (socket closed): the connection that raised it is unusable. */
function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || /^57P0[123]$/.test(code) || /^E[A-Z]+$/.test(code);
}

/**
 * One parameterized statement on a connection from Sequelize's own pool (same settings: statement_timeout,
 * application_name, pool size), borrowed through Sequelize's published `connectionManager` interface
 * (`getConnection`, `releaseConnection`, `destroyConnection`), without Sequelize's query building and result
 * mapping: for the few statements on every request's path (idempotency, rate limiting, verify), where Sequelize cost
 * more CPU than PostgreSQL did (scripts/bench/PROFILE.md). A `name` makes it a prepared statement on each connection
 * (parsed once per connection). Rows come back as pg returns them (column names as in SQL, timestamptz as Date,
 * bigint as string).
 *
 * A connection-level failure is thrown as Sequelize's ConnectionError (and the connection is destroyed, not returned
 * to the pool), so the error handler answers 503 SERVICE_UNAVAILABLE as it does for Sequelize's own queries; an SQL
 * error (with its SQLSTATE `code`) is thrown as pg raised it.
 */
export async function pgQuery<R extends QueryResultRow = QueryResultRow>(
  db: Sequelize,
  text: string,
  values: unknown[],
  name?: string,
): Promise<{ rows: R[]; rowCount: number }> {
  const pool = db.connectionManager;
  const connection = await pool.getConnection({ type: 'write' });
  if (!isPgClient(connection)) {
    pool.releaseConnection(connection);
    throw new Error('pgQuery needs the postgres dialect');
  }
  let result;
  try {
    result = await connection.query<R>(name ? { name, text, values } : { text, values });
  } catch (err) {
    if (!isConnectionFailure(err)) {
      pool.releaseConnection(connection);
      throw err;
    }
    await pool.destroyConnection(connection).catch(() => undefined);
    throw new ConnectionError(err as Error);
  }
  pool.releaseConnection(connection);
  return { rows: result.rows, rowCount: result.rowCount ?? 0 };
}

/**
 * Appended to a write's RETURNING list: the statement's own (implicit) transaction then commits with
 * `synchronous_commit = off` (`set_config(..., true)` is local to that transaction and still in force when it commits):
 * the commit is visible at once, as any other, but does not wait for its WAL flush (the WAL writer flushes it within
 * ~200 ms). Only a crash of PostgreSQL itself (not of the service) can lose such a commit, and only the last few
 * hundred ms of them; the WAL is one sequence, so any later synchronous commit (a settle's claim of the same attempt)
 * flushes it first. For records that move no money only: verify's attempt and its Idempotency-Key records
 * (server/README.md "Verify's commits"). A statement that returns no row commits as usual (it wrote nothing).
 */
export const DEFERRED_COMMIT = `set_config('synchronous_commit', 'off', true) AS deferred_commit`;

/**
 * One kind of statement from concurrent requests, coalesced (group commit): the calls made during one turn of the
 * event loop are run as ONE set-based statement (`runMany`, e.g. `INSERT ... SELECT * FROM unnest($1::text[], ...)`),
 * at most `maxBatch` calls per statement, and each caller gets its own answer. The statement is sent from
 * setImmediate, after the I/O callbacks of the current turn, so no caller waits for a timer. A lone call runs its own
 * single-row statement (`runOne`). When the set-based statement fails with an SQL error, every call of that batch is
 * run alone, so one caller's error (a constraint, a bad value) stays its own; a connection failure fails the batch
 * (each caller sees it, as it would have seen it on its own statement).
 *
 * Each call still gets exactly the answer its own statement would give: the set-based statement must be the same
 * rows' statement, row by row, and the caller must not put two calls that touch the same row into one batch
 * (`rowKey`: calls with a key already in the batch wait for the next batch).
 */
export class PgCoalescer<P, A> {
  private queue: Array<{ params: P; resolve(a: A): void; reject(e: unknown): void }> = [];
  private scheduled = false;

  constructor(
    private readonly opts: {
      runOne(params: P): Promise<A>;
      runMany(batch: P[]): Promise<A[]>;
      /** Calls with the same key never share a batch. */
      rowKey(params: P): string;
      maxBatch: number;
    },
  ) {}

  call(params: P): Promise<A> {
    return new Promise<A>((resolve, reject) => {
      this.queue.push({ params, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const waiting = this.queue;
    this.queue = [];
    let batch: typeof waiting = [];
    const keys = new Set<string>();
    const later: typeof waiting = [];
    for (const w of waiting) {
      const key = this.opts.rowKey(w.params);
      if (keys.has(key) || batch.length >= this.opts.maxBatch) {
        if (keys.has(key)) {
          later.push(w);
          continue;
        }
        this.runBatch(batch);
        batch = [];
        keys.clear();
      }
      keys.add(key);
      batch.push(w);
    }
    if (batch.length) this.runBatch(batch);
    if (later.length) {
      // same row twice in one turn (rare: a client repeating a key at once): the repeats go one batch later
      this.queue.unshift(...later);
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    }
  }

  private runBatch(batch: Array<{ params: P; resolve(a: A): void; reject(e: unknown): void }>): void {
    const one = (w: (typeof batch)[number]) => this.opts.runOne(w.params).then(w.resolve, w.reject);
    if (batch.length === 1) {
      void one(batch[0]);
      return;
    }
    this.opts.runMany(batch.map((w) => w.params)).then(
      (answers) => batch.forEach((w, i) => w.resolve(answers[i])),
      (err: unknown) => {
        if (err instanceof ConnectionError) batch.forEach((w) => w.reject(err));
        else batch.forEach((w) => void one(w));
      },
    );
  }
}

/**
 * Several statements in one transaction on one connection of Sequelize's pool (as pgQuery borrows it): `work` gets a
 * query function; COMMIT when it resolves, ROLLBACK when it throws (or when it returns false: all or nothing without
 * an exception). A connection-level failure destroys the connection and is thrown as ConnectionError.
 */
export async function pgTransaction<T>(
  db: Sequelize,
  work: (
    query: <R extends QueryResultRow = QueryResultRow>(text: string, values: unknown[]) => Promise<R[]>,
  ) => Promise<T>,
): Promise<T> {
  const pool = db.connectionManager;
  const connection = await pool.getConnection({ type: 'write' });
  if (!isPgClient(connection)) {
    pool.releaseConnection(connection);
    throw new Error('pgTransaction needs the postgres dialect');
  }
  let broken = false;
  const query = async <R extends QueryResultRow>(text: string, values: unknown[]) => {
    try {
      return (await connection.query<R>({ text, values })).rows;
    } catch (err) {
      broken = isConnectionFailure(err);
      throw err;
    }
  };
  try {
    await query('BEGIN', []);
    const out = await work(query);
    await query(out === false ? 'ROLLBACK' : 'COMMIT', []);
    pool.releaseConnection(connection);
    return out;
  } catch (err) {
    if (broken) {
      await pool.destroyConnection(connection).catch(() => undefined);
      throw new ConnectionError(err as Error);
    }
    await connection.query('ROLLBACK').catch(() => undefined);
    pool.releaseConnection(connection);
    throw err;
  }
}
