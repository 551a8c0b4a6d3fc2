/**
 * Issue #22: `npm run quickstart` against a running `npm start` reaches a paid response and a verified receipt,
 * as a buyer and as an agent, with nothing else configured. Both are the real programs: main.ts in its own process
 * and the quickstart's own files (examples/quickstart/, importing the built SDKs as a user's project would).
 */
import { freePort } from '../../server/test/support/free-port';
import { runNpmScript, startMain, type StartedMain } from '../support/main-process';

describe('npm run quickstart', () => {
  let main: StartedMain;
  beforeAll(async () => {
    main = await startMain();
  });
  afterAll(async () => {
    await main?.stop();
  });

  it(
    'against a running npm start: funds, signs up, serves the paywall with a payments key, catalogs, finds, ' +
      'pays, and both receipts verify offline and on the ledger',
    async () => {
      const run = await runNpmScript('quickstart', {
        MARKETPLACE_URL: main.baseUrl,
        LOCAL_NETWORK_URL: main.localNetworkUrl,
      });
      if (run.code !== 0 || run.stderr)
        throw new Error(`quickstart failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
      expect(run.code).toBe(0);
      const out = run.stdout;
      // every step says what it does and which call it makes
      for (let n = 0; n <= 16; n++) expect(out).toMatch(new RegExp(`\\[${n}\\] .+\\n {4}-> .+`));
      // least privilege: the paywall is served with a payments-scoped key created after sign-up, which may not write
      // the
      // catalog
      expect(out).toMatch(
        /\[4\] Create a payments-scoped API key.+\n {4}-> keys\.create: POST \/v1\/sellers\/[^/\s]+\/keys \{"name":"quickstart paywall","scope":"payments"\}\n {4}key key_\w+, scope payments, mk_[\w-]+\.\.\. \(shown once/,
      );
      expect(out).toMatch(/\[5\] .+its paywall holds only the payments key/);
      expect(out).toMatch(
        /the paywall's payments key may not change it \(PATCH \/v1\/resources\/[^)]+\): 403 FORBIDDEN/,
      );
      expect(out).toContain('wallet ready to be paid: true (USDC on stellar:testnet: ok)');
      expect(out).toContain('HTTP 402, PAYMENT-REQUIRED header: present');
      expect(out).toMatch(
        /HTTP 200, paid: true, response: \{"city":"Lisbon","temperatureC":21\.5,"forecast":"sunny"\}/,
      );
      expect(out).toMatch(/"status":"settled","evidence":"local_simulation"/);
      expect(out).toMatch(/\[12\][\s\S]*valid: true, key [^,]+, signed payload: \{/);
      expect(
        out.match(/\{"ok":true,"status":"SUCCESS","ledger":\d+,"checked":\["asset","amount","payTo"\],"transfer":\{/g),
      ).toHaveLength(2);
      expect(out).toMatch(/paid: true, result: \{"status":200,.*"city":"Porto"/);
      expect(out).toContain('Done: the buyer spent 0.0200000 USDC. Everything above is local simulation.');
    },
    300_000,
  );

  it('when nothing answers at MARKETPLACE_URL, it says to run npm start first and exits 1', async () => {
    const run = await runNpmScript('quickstart', {
      MARKETPLACE_URL: 'http://127.0.0.1:9',
      LOCAL_NETWORK_URL: main.localNetworkUrl,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('nothing answers at http://127.0.0.1:9: run `npm start` in another terminal first');
  }, 60_000);
});

/**
 * The second walk-through: domain verification completed on one machine, with the documented local-development
 * mode on (LOCAL_DEV_DOMAINS=true), and refused with the mode off (the default).
 */
describe('npm run quickstart:domain (LOCAL_DEV_DOMAINS)', () => {
  it(
    'with LOCAL_DEV_DOMAINS=true, a *.test domain is verified over http on 127.0.0.1 and the profile says ' +
      'verified',
    async () => {
      const port = await freePort();
      const main = await startMain({ LOCAL_DEV_DOMAINS: 'true', LOCAL_DEV_DOMAINS_PORT: String(port) });
      try {
        const run = await runNpmScript('quickstart:domain', {
          MARKETPLACE_URL: main.baseUrl,
          LOCAL_NETWORK_URL: main.localNetworkUrl,
          LOCAL_DEV_DOMAINS_PORT: String(port),
        });
        if (run.code !== 0 || run.stderr)
          throw new Error(`quickstart:domain failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
        expect(run.code).toBe(0);
        expect(run.stdout).toContain('status: verified');
        expect(run.stdout).toMatch(/\[5\][\s\S]*status: verified, verified at \d{4}-/);
        expect(main.logs()).toContain('LOCAL_DEV_DOMAINS is on');
      } finally {
        await main.stop();
      }
    },
    300_000,
  );

  it(
    'with the mode off (the default), the same walk-through cannot verify a *.test domain and says how to turn ' +
      'the mode on',
    async () => {
      const port = await freePort();
      const main = await startMain({ LOCAL_DEV_DOMAINS_PORT: String(port) });
      try {
        const run = await runNpmScript('quickstart:domain', {
          MARKETPLACE_URL: main.baseUrl,
          LOCAL_NETWORK_URL: main.localNetworkUrl,
          LOCAL_DEV_DOMAINS_PORT: String(port),
        });
        expect(run.code).toBe(1);
        expect(run.stdout).toContain('status: failed');
        expect(run.stderr).toContain('restart it with LOCAL_DEV_DOMAINS=true npm start');
      } finally {
        await main.stop();
      }
    },
    300_000,
  );
});
