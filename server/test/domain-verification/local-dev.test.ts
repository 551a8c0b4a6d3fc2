/**
 * LOCAL_DEV_DOMAINS (issue #22): only *.test names reach 127.0.0.1 over http; every other domain keeps the normal
 * rules (https only, public addresses only).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkDomain } from '../../src/domain/sellers/domain-verification';
import { createDnsTxtResolver, createLocalDevDomainCheck, createSafeFetcher } from '../../src/net';

describe('local-development domain checks', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/.well-known/marketplace-verification.txt')
        res.end('mv_token_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n');
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const mode = () =>
    createLocalDevDomainCheck({
      port,
      real: {
        fetchText: createSafeFetcher({ timeoutMs: 2000 }),
        resolveTxt: createDnsTxtResolver({ timeoutMs: 2000 }),
      },
    });

  it(
    'when the domain is under .test, the check is fetched over ' + 'http from 127.0.0.1 on the configured port',
    async () => {
      const local = mode();
      expect(local.urlBase('shop.test')).toBe(`http://shop.test:${port}`);
      expect(local.urlBase('weather.example.com')).toBe('https://weather.example.com');
      const res = await local.ports.fetchText(`http://shop.test:${port}/.well-known/marketplace-verification.txt`);
      expect(res).toMatchObject({ status: 200, body: 'mv_token_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n' });
    },
  );

  it('when the domain is not under .test, http and loopback stay refused as without the mode', async () => {
    const local = mode();
    await expect(
      local.ports.fetchText(`http://127.0.0.1:${port}/.well-known/marketplace-verification.txt`),
    ).rejects.toMatchObject({ reason: 'insecure_url' });
    await expect(local.ports.fetchText(`https://localhost:${port}/x`)).rejects.toMatchObject({
      reason: 'private_address',
    });
  });

  it(
    'when a .test domain publishes the token, checkDomain verifies it through the mode; dns_txt has nothing to ' +
      'find',
    async () => {
      const local = mode();
      const input = {
        domain: 'shop.test',
        walletAddress: 'GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5',
        token: 'mv_token_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      };
      const ok = await checkDomain('https_well_known', input, local.ports, { urlBase: local.urlBase });
      expect(ok).toEqual({ verified: true, reason: null, message: null });
      const txt = await checkDomain('dns_txt', input, local.ports, { urlBase: local.urlBase });
      expect(txt).toMatchObject({ verified: false });
    },
  );
});
