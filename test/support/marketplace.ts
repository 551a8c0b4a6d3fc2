import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Keypair } from '@stellar/stellar-sdk';
import express from 'express';
import http from 'node:http';
import https from 'node:https';
import { startLocalNetwork, trustCertificate, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { createSelfSignedCertificate } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, type TestService } from '../../server/test/support/test-service';
import { createSellerClient, paywall, type SellerClient } from '../../sdk-seller/src';

export async function listen(app: {
  listen: (port: number, host: string, cb: () => void) => Server;
}): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface Marketplace {
  network: LocalNetwork;
  service: TestService;
  baseUrl: string;
  stop(): Promise<void>;
}

/** The local network (ledgers close every 200 ms) and the real service with its workers, listening on a free port. */
export async function startMarketplace(): Promise<Marketplace> {
  const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 200 });
  const service = await startTestService({
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    runJobs: true,
    jobPollMs: 100,
  });
  const http = await listen(service.app);
  return {
    network,
    service,
    baseUrl: `http://127.0.0.1:${http.port}`,
    async stop() {
      await http.close();
      await service.stop();
      await network.stop();
    },
  };
}

/**
 * The tutorial's sellers use domains under `.test` (RFC 2606, reserved for testing; the service refuses
 * `localhost` and IPs as seller domains), so their cataloged URLs pass the catalog's "URL host is the seller's
 * domain" rule. Nothing resolves `.test`, so this fetch sends those hosts to 127.0.0.1, where the seller's
 * Express app listens. Everything else goes out unchanged.
 */
export function loopbackFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const request = input instanceof Request ? input : new Request(input, init);
  const url = new URL(request.url);
  if (!url.hostname.endsWith('.test')) return fetch(request);
  url.hostname = '127.0.0.1';
  return fetch(new Request(url, request));
}

export interface PaidEndpoint {
  seller: SellerClient;
  sellerId: string;
  wallet: Keypair;
  resourceId: string;
  /** The cataloged URL (a route template). */
  url: string;
  handlerCalls: number;
  stop(): Promise<void>;
}

/**
 * The tutorial's seller: signs up through the seller SDK, serves a paywalled Express route (its paywall holds a
 * payments-scoped key; `seller` is the admin client) and catalogs it.
 */
export async function sellerWithPaidEndpoint(
  m: Marketplace,
  opts: { name: string; domain: string; price: string },
): Promise<PaidEndpoint> {
  const wallet = Keypair.random();
  await m.network.fundAccount(wallet.publicKey());
  await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
  const usdc = m.network.assets.find((a) => a.code === 'USDC')!;

  const signup = createSellerClient({ baseUrl: m.baseUrl });
  const { seller: me, apiKey } = await signup.sellers.signUp({ displayName: opts.name, domain: opts.domain, wallet });
  const seller = signup.withApiKey(apiKey);
  // The paywall holds only a payments-scoped key (verify, settle, reading its own payments), never the admin key.
  const paymentsKey = await seller.keys.create(me.id, { name: 'paywall', scope: 'payments' });
  const paywallClient = createSellerClient({ baseUrl: m.baseUrl, apiKey: paymentsKey.secret });

  const app = express();
  const endpoint: PaidEndpoint = {
    seller,
    sellerId: me.id,
    wallet,
    resourceId: '',
    url: '',
    handlerCalls: 0,
    stop: async () => undefined,
  };
  app.get(
    '/v1/forecast/:city',
    (req, res, next) =>
      paywall({ client: paywallClient, resourceId: endpoint.resourceId, description: 'Hourly forecast' })(
        req,
        res,
        next,
      ),
    (req, res) => {
      endpoint.handlerCalls += 1;
      res.json({ city: req.params.city, temperatureC: 21.5 });
    },
  );
  const http = await listen(app);
  endpoint.stop = http.close;
  endpoint.url = `http://${opts.domain}:${http.port}/v1/forecast/{city}`;

  const draft = {
    type: 'http' as const,
    name: `${opts.name} forecast`,
    description: 'Hourly weather forecast for a city, paid per call in USDC',
    url: endpoint.url,
    routeTemplate: '/v1/forecast/{city}',
    network: 'stellar:testnet' as const,
    payTo: wallet.publicKey(),
    assetCode: 'USDC',
    assetIssuer: usdc.issuer,
    amount: opts.price,
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    outputSchema: { type: 'object', properties: { city: { type: 'string' }, temperatureC: { type: 'number' } } },
    extensions: { bazaar: { discoverable: true } },
  };
  const validation = await seller.catalog.validate({ sellerId: me.id, resource: draft });
  if (!validation.ok) throw new Error(`catalog validation failed: ${JSON.stringify(validation.errors)}`);
  const cataloged = await seller.catalog.catalog({ sellerId: me.id, resource: draft });
  endpoint.resourceId = cataloged.resourceId;
  return endpoint;
}

export async function eventually<T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 20_000,
  everyMs = 200,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * An HTTPS front for the local network's RPC, for the stock @x402/stellar client, which refuses http:// RPC URLs.
 * The service keeps the plain-HTTP URL (its friendbot calls use fetch, which would not trust a self-signed
 * certificate); the front's certificate is trusted by https.globalAgent, which the Stellar SDK's RPC client uses.
 */
export async function httpsRpcFront(network: LocalNetwork): Promise<{ rpcUrl: string; close(): Promise<void> }> {
  const material = await createSelfSignedCertificate(['127.0.0.1']);
  const target = new URL(network.baseUrl);
  const server = https.createServer({ key: material.keyPem, cert: material.certPem }, (req, res) => {
    const upstream = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  trustCertificate(material.certPem);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    rpcUrl: `https://127.0.0.1:${port}/rpc`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
