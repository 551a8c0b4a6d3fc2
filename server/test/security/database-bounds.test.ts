import { startTestService, type TestService } from '../support/test-service';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ statementTimeoutMs: 300 });
});
afterAll(async () => {
  await svc.stop();
});

describe('statement_timeout on the service connections', () => {
  it('every connection of the service carries the configured statement_timeout', async () => {
    const [[row]] = (await svc.db.query("SELECT current_setting('statement_timeout') AS statement_timeout")) as [
      Array<{ statement_timeout: string }>,
      unknown,
    ];
    expect(row.statement_timeout).toBe('300ms');
  });

  it('a statement that runs past it is cancelled by PostgreSQL instead of holding the connection', async () => {
    await expect(svc.db.query('SELECT pg_sleep(30)')).rejects.toThrow(/statement timeout/);
    const [[row]] = (await svc.db.query('SELECT 1 AS ok')) as [Array<{ ok: number }>, unknown];
    expect(row.ok).toBe(1);
  });
});
