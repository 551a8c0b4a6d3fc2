/**
 * Issue #22: `npm run quickstart` against a running `npm start` reaches a paid response and a verified receipt,
 * as a buyer and as an agent, with nothing else configured. Both are the real programs: main.ts in its own process
 * and the quickstart's own files (examples/quickstart/, importing the built SDKs as a user's project would).
 */
import { runNpmScript, startMain, type StartedMain } from '../support/main-process';

describe('npm run quickstart', () => {
  let main: StartedMain;
  beforeAll(async () => {
    main = await startMain();
  });
  afterAll(async () => {
    await main?.stop();
  });

  it('against a running npm start: funds, signs up, catalogs, finds, pays, and both receipts verify offline and on the ledger', async () => {
    const run = await runNpmScript('quickstart', { MARKETPLACE_URL: main.baseUrl, LOCAL_NETWORK_URL: main.localNetworkUrl });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = run.stdout;
    // every step says what it does and which call it makes
    for (let n = 0; n <= 15; n++) expect(out).toMatch(new RegExp(`\\[${n}\\] .+\\n    -> .+`));
    expect(out).toContain('HTTP 402, PAYMENT-REQUIRED header: present');
    expect(out).toMatch(/HTTP 200, paid: true, response: \{"city":"Lisbon","temperatureC":21\.5,"forecast":"sunny"\}/);
    expect(out).toMatch(/"status":"settled","evidence":"local_simulation"/);
    expect(out).toMatch(/\[11\][\s\S]*valid: true, signed payload: /);
    expect(out.match(/\{"ok":true,"status":"SUCCESS","ledger":\d+\}/g)).toHaveLength(2);
    expect(out).toMatch(/paid: true, result: \{"status":200,.*"city":"Porto"/);
    expect(out).toContain('Done: the buyer spent 0.0200000 USDC. Everything above is local simulation.');
  }, 300_000);

  it('when nothing answers at MARKETPLACE_URL, it says to run npm start first and exits 1', async () => {
    const run = await runNpmScript('quickstart', { MARKETPLACE_URL: 'http://127.0.0.1:9', LOCAL_NETWORK_URL: main.localNetworkUrl });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('nothing answers at http://127.0.0.1:9: run `npm start` in another terminal first');
  }, 60_000);
});
