/**
 * GET /.well-known/x402 (issue #30): this service described as an x402 v2 facilitator. Its kinds, extensions and
 * signers are the live data of GET /x402/supported; a stock HTTPFacilitatorClient pointed at its facilitator URL
 * reads the same kinds. Real PostgreSQL, the local network.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, type TestService } from '../support/test-service';

describe('GET /.well-known/x402: this facilitator, described', () => {
  let network: LocalNetwork;
  let svc: TestService;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
    svc = await startTestService({
      networks: testNetworks({
        rpcUrl: network.rpcUrl,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      facilitator: { channelAccounts: 2, pollMs: 25 },
    });
    server = await new Promise((resolve) => {
      const s = http.createServer(svc.app).listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await svc?.stop();
    await network?.stop();
  });

  it(
    'its kinds, extensions and signers equal live /x402/supported, and it names the facilitator URL /x402 with ' +
      'its paths',
    async () => {
      const [wellKnown, supported] = await Promise.all([
        request(svc.app).get('/.well-known/x402'),
        request(svc.app).get('/x402/supported'),
      ]);
      expect(wellKnown.status).toBe(200);
      expect(supported.status).toBe(200);
      expect(wellKnown.body.kinds.length).toBeGreaterThan(0);
      expect(wellKnown.body.kinds).toEqual(supported.body.kinds);
      expect(wellKnown.body.extensions).toEqual(supported.body.extensions);
      expect(wellKnown.body.signers).toEqual(supported.body.signers);
      expect(wellKnown.body).toMatchObject({
        x402Version: 2,
        facilitator: {
          url: '/x402',
          supported: '/x402/supported',
          verify: '/x402/verify',
          settle: '/x402/settle',
          discovery: '/x402/discovery/resources',
        },
      });
    },
  );

  it('a stock HTTPFacilitatorClient pointed at the described facilitator URL reads the same kinds', async () => {
    const described = (await request(svc.app).get('/.well-known/x402')).body;
    const stock = new HTTPFacilitatorClient({ url: new URL(described.facilitator.url, base).href });
    const supported = await stock.getSupported();
    expect(supported.kinds).toEqual(described.kinds);
    expect(supported.extensions).toEqual(described.extensions);
  });

  it('is public, and never reflects the request Host header (cache poisoning through a forged Host)', async () => {
    const res = await request(svc.app).get('/.well-known/x402').set('Host', 'evil.example');
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toContain('evil.example');
  });
});
