import type pg from 'pg';
import { createSequelize } from '../../src/data/database';
import { createTestDatabase } from '../support/database';

/**
 * The pool lends its most recently used connection first, so under a trickle every other connection sits unused;
 * with Sequelize's default idle time (10 s) they were closed in any lull and the next burst opened them again on its
 * requests' path (a backend's fork, log-in and first statements: 38-93 ms each, ~300 ms for seven at once on this
 * machine; scripts/bench/PROFILE.md "Verify (session 7)"). That was most of bench:verify's half-rate p99.
 */
describe('the connection pool between bursts', () => {
  it(
    'a burst after a 12 s lull is served by the connections the previous burst opened: no new backend is started ' +
      'on its path',
    async () => {
      const database = await createTestDatabase();
      const db = createSequelize(database.url, { poolMax: 5 });
      // A burst holds five connections at once (taken from the pool together, given back once all five are out, so
      // none is lent twice however slowly PostgreSQL opens them); each answers with its backend's process id.
      const burst = async () => {
        const held = (await Promise.all(
          Array.from({ length: 5 }, () => db.connectionManager.getConnection({ type: 'write' })),
        )) as unknown as pg.Client[];
        try {
          return new Set(
            await Promise.all(
              held.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid),
            ),
          );
        } finally {
          for (const c of held) db.connectionManager.releaseConnection(c as never);
        }
      };
      // The lull as the pool sees it: its idle check (sequelize-pool's sweep, every second while a connection is
      // free) compares Date.now() with each free connection's deadline. The clock is moved 12 s on (longer than the
      // former 10 s idle time) and the test waits for the pool's next sweep, instead of sleeping 12 s.
      const pool = (db.connectionManager as unknown as { pool: { _removeIdle(): void } }).pool;
      const sweep = jest.spyOn(pool, '_removeIdle');
      const now = Date.now.bind(Date);
      try {
        const first = await burst();
        expect(first.size).toBe(5);
        const lull = jest.spyOn(Date, 'now').mockImplementation(() => now() + 12_000);
        const sweepsBefore = sweep.mock.calls.length;
        while (sweep.mock.calls.length === sweepsBefore) await new Promise((resolve) => setTimeout(resolve, 50));
        lull.mockRestore();
        const second = await burst();
        expect([...second].sort()).toEqual([...first].sort());
      } finally {
        jest.restoreAllMocks();
        await db.close();
        await database.drop();
      }
    },
    60_000,
  );
});
