import http from 'node:http';
import { checkDomain, newChallengeToken, type DomainCheckPorts } from '../../src/domain/sellers/domain-verification';
import { createSafeFetcher } from '../../src/net';
import { OTHER_WALLET, WALLET, routes, startLocalServer, type LocalServer } from './local-server';

const DOMAIN = 'shop.example.com';

describe('checkDomain over HTTP against a local server', () => {
  let server: LocalServer;
  let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  let token: string;
  let ports: DomainCheckPorts;
  const check = (method: 'stellar_toml' | 'https_well_known') =>
    checkDomain(method, { domain: DOMAIN, walletAddress: WALLET, token }, ports, { urlBase: () => server.origin });

  const stellarToml = (accounts: string[], verification: string): string =>
    [
      '# SEP-1',
      'NETWORK_PASSPHRASE = "Public Global Stellar Network ; September 2015"',
      'ACCOUNTS = [',
      ...accounts.map((a) => `  "${a}",`),
      ']',
      `MARKETPLACE_VERIFICATION = "${verification}"`,
      '',
      '[DOCUMENTATION]',
      'ORG_NAME = "Shop"',
    ].join('\n');

  beforeAll(async () => {
    server = await startLocalServer((req, res) => handler(req, res));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    token = newChallengeToken();
    server.requests.length = 0;
    ports = {
      fetchText: createSafeFetcher({
        allowInsecureForTests: true,
        allowPrivateAddressesForTests: true,
        // A bound on a hang, not on speed (500 ms expired against this local server at load 20); the timeout test
        // below sets its own.
        timeoutMs: 10_000,
      }),
      resolveTxt: async () => [],
    };
  });

  describe('stellar_toml', () => {
    it('is verified when ACCOUNTS lists the wallet and MARKETPLACE_VERIFICATION is the token', async () => {
      handler = routes({ '/.well-known/stellar.toml': stellarToml([OTHER_WALLET, WALLET], token) });
      await expect(check('stellar_toml')).resolves.toEqual({ verified: true, reason: null, message: null });
      expect(server.requests).toEqual(['/.well-known/stellar.toml']);
    });

    it('fails with account_missing when ACCOUNTS does not list the wallet', async () => {
      handler = routes({ '/.well-known/stellar.toml': stellarToml([OTHER_WALLET], token) });
      await expect(check('stellar_toml')).resolves.toEqual({
        verified: false,
        reason: 'account_missing',
        message: `The top-level ACCOUNTS array in ${server.origin}/.well-known/stellar.toml does not list ${WALLET}`,
      });
    });

    it('fails with token_mismatch when MARKETPLACE_VERIFICATION holds another token', async () => {
      const other = newChallengeToken();
      handler = routes({ '/.well-known/stellar.toml': stellarToml([WALLET], other) });
      const result = await check('stellar_toml');
      expect(result).toMatchObject({ verified: false, reason: 'token_mismatch' });
      expect(result.message).not.toContain(other);
    });

    it('fails with token_mismatch when MARKETPLACE_VERIFICATION is absent', async () => {
      handler = routes({ '/.well-known/stellar.toml': `ACCOUNTS = ["${WALLET}"]\n` });
      await expect(check('stellar_toml')).resolves.toMatchObject({
        verified: false,
        reason: 'token_mismatch',
        message: expect.stringContaining('has no top-level'),
      });
    });

    it('fails with invalid_toml when the file does not parse', async () => {
      handler = routes({
        '/.well-known/stellar.toml': `ACCOUNTS = ["${WALLET}"\nMARKETPLACE_VERIFICATION = "${token}"`,
      });
      await expect(check('stellar_toml')).resolves.toMatchObject({ verified: false, reason: 'invalid_toml' });
    });

    it('fails with http_status when the file is missing (404)', async () => {
      handler = routes({});
      await expect(check('stellar_toml')).resolves.toEqual({
        verified: false,
        reason: 'http_status',
        message: `${server.origin}/.well-known/stellar.toml answered 404, expected 200`,
      });
    });
  });

  describe('https_well_known', () => {
    it('is verified when the file is the token', async () => {
      handler = routes({ '/.well-known/marketplace-verification.txt': `${token}\n` });
      await expect(check('https_well_known')).resolves.toEqual({ verified: true, reason: null, message: null });
    });

    it('is verified when one line of the file is the token', async () => {
      handler = routes({ '/.well-known/marketplace-verification.txt': `old-token-from-last-year\r\n  ${token}  \r\n` });
      await expect(check('https_well_known')).resolves.toMatchObject({ verified: true });
    });

    it('fails with token_mismatch when the file holds something else, without echoing it', async () => {
      handler = routes({ '/.well-known/marketplace-verification.txt': `${token}-but-longer` });
      const result = await check('https_well_known');
      expect(result).toMatchObject({ verified: false, reason: 'token_mismatch' });
      expect(result.message).not.toContain('but-longer');
    });

    it('fails with http_status when the file is missing (404)', async () => {
      handler = routes({});
      await expect(check('https_well_known')).resolves.toMatchObject({ verified: false, reason: 'http_status' });
    });

    it('fails with redirect on a 3xx and does not follow it', async () => {
      handler = (req, res) =>
        req.url === '/.well-known/marketplace-verification.txt'
          ? res.writeHead(301, { location: '/elsewhere.txt' }).end()
          : res.writeHead(200).end(token);
      await expect(check('https_well_known')).resolves.toMatchObject({
        verified: false,
        reason: 'redirect',
        message: expect.stringContaining('answered 301 (a redirect); redirects are not followed'),
      });
      expect(server.requests).toEqual(['/.well-known/marketplace-verification.txt']);
    });

    it('fails with too_large when the file is over the size limit', async () => {
      ports.fetchText = createSafeFetcher({ allowInsecureForTests: true, allowPrivateAddressesForTests: true });
      handler = routes({ '/.well-known/marketplace-verification.txt': `${token}\n${'#'.repeat(64 * 1024)}` });
      await expect(check('https_well_known')).resolves.toMatchObject({ verified: false, reason: 'too_large' });
    });

    it('fails with timeout when the server is too slow', async () => {
      ports.fetchText = createSafeFetcher({
        allowInsecureForTests: true,
        allowPrivateAddressesForTests: true,
        timeoutMs: 200,
      });
      handler = (_req, res) => setTimeout(() => res.writeHead(200).end(token), 1000).unref();
      await expect(check('https_well_known')).resolves.toMatchObject({ verified: false, reason: 'timeout' });
    });
  });

  it('with the production fetcher, fails with insecure_url for an http base and never reaches the server', async () => {
    ports.fetchText = createSafeFetcher();
    handler = routes({ '/.well-known/marketplace-verification.txt': token });
    await expect(check('https_well_known')).resolves.toMatchObject({ verified: false, reason: 'insecure_url' });
    expect(server.requests).toEqual([]);
  });
});

describe('checkDomain input and port failures', () => {
  const token = newChallengeToken();
  const ports: DomainCheckPorts = {
    fetchText: async () => {
      throw new Error('secret connection string postgres://u:p@db');
    },
    resolveTxt: async () => [],
  };

  it.each(['localhost', '127.0.0.1', 'https://shop.example.com', 'shop.example.com:8443'])(
    'fails with invalid_domain for %s before any I/O',
    async (domain) => {
      const fetchText = jest.fn();
      await expect(
        checkDomain('stellar_toml', { domain, walletAddress: WALLET, token }, { fetchText, resolveTxt: jest.fn() }),
      ).resolves.toMatchObject({
        verified: false,
        reason: 'invalid_domain',
      });
      expect(fetchText).not.toHaveBeenCalled();
    },
  );

  it('fails with invalid_input for a malformed wallet or token', async () => {
    await expect(
      checkDomain('dns_txt', { domain: DOMAIN, walletAddress: 'GABC', token }, ports),
    ).resolves.toMatchObject({ reason: 'invalid_input' });
    await expect(
      checkDomain('dns_txt', { domain: DOMAIN, walletAddress: WALLET, token: '' }, ports),
    ).resolves.toMatchObject({ reason: 'invalid_input' });
  });

  it('turns an unexpected port error into check_failed without leaking its message', async () => {
    await expect(
      checkDomain('https_well_known', { domain: DOMAIN, walletAddress: WALLET, token }, ports),
    ).resolves.toEqual({
      verified: false,
      reason: 'check_failed',
      message: 'The check failed unexpectedly',
    });
  });
});
