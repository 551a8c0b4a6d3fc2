/**
 * call_paid_resource pays only what the agent inspected and fetches only public addresses (issue #20 item 5,
 * issue #22 item 6). Sellers are real paywalled Express apps (seller SDK) on 127.0.0.1 cataloged under `.test`
 * domains, in front of the REAL marketplace and the local network; the agent is a stock MCP client.
 */
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createBuyerClient, createMarketplaceMcpServer, type MarketplaceMcpOptions } from '../src';
import { isPrivateAddress } from '../src/payments/safe-fetch';
import { createSellerClient, paywall, type PaywallOptions } from '../../sdk-seller/src';
import { eventually, listen, loopbackFetch, startMarketplace, type Marketplace } from '../../test/support/marketplace';

describe('call_paid_resource against sellers that change their terms or point inward', () => {
  let m: Marketplace;
  let buyerKey: Keypair;
  const stops: Array<() => Promise<void>> = [];
  const handled: string[] = [];

  /** A seller on 127.0.0.1 cataloged at http://<domain>:<port>/paid at `price`; its paywall may ask other terms. */
  async function seller(
    domain: string,
    price: string,
    live?: (t: {
      payTo: string;
      usdc: { code: string; issuer: string };
    }) => Partial<NonNullable<PaywallOptions['requirements']>>,
    route?: express.RequestHandler,
  ) {
    const wallet = Keypair.random();
    await m.network.fundAccount(wallet.publicKey());
    await m.network.faucet(wallet.publicKey(), 'USDC', '0.0000001');
    const usdc = m.network.assets.find((a) => a.code === 'USDC')!;
    const signup = createSellerClient({ baseUrl: m.baseUrl });
    const { seller: me, apiKey } = await signup.sellers.signUp({ displayName: domain, domain, wallet });
    const client = signup.withApiKey(apiKey);
    const app = express();
    const state = { resourceId: '' };
    const terms = {
      scheme: 'exact' as const,
      network: 'stellar:testnet' as const,
      amount: price,
      payTo: wallet.publicKey(),
      asset: { code: 'USDC', issuer: usdc.issuer },
      maxTimeoutSeconds: 300,
      resource: '',
    };
    if (route) app.get('/paid', route);
    else
      app.get(
        '/paid',
        (req, res, next) =>
          paywall({
            client,
            resourceId: state.resourceId,
            ...(live ? { requirements: { ...terms, ...live({ payTo: wallet.publicKey(), usdc }) } } : {}),
          })(req, res, next),
        (_req, res) => {
          handled.push(domain);
          res.json({ ok: true, from: domain });
        },
      );
    const h = await listen(app);
    stops.push(h.close);
    const url = `http://${domain}:${h.port}/paid`;
    const cataloged = await client.catalog.catalog({
      sellerId: me.id,
      resource: {
        type: 'http',
        name: `${domain} data`,
        description: 'Paid data for the call_paid_resource attacks',
        url,
        routeTemplate: '/paid',
        network: 'stellar:testnet',
        payTo: wallet.publicKey(),
        assetCode: 'USDC',
        assetIssuer: usdc.issuer,
        amount: price,
        inputSchema: { type: 'object', properties: {} },
        outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
        extensions: { bazaar: { discoverable: true } },
      },
    });
    state.resourceId = cataloged.resourceId;
    return { resourceId: cataloged.resourceId, wallet };
  }

  async function agent(options: Partial<MarketplaceMcpOptions> = {}) {
    const buyer = createBuyerClient({
      baseUrl: m.baseUrl,
      fetch: loopbackFetch,
      payment: { signer: buyerKey, budget: { perCall: '1', total: '5' } },
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await createMarketplaceMcpServer({
      marketplace: buyer,
      payer: buyer,
      perCallLimit: '1',
      fetch: loopbackFetch,
      ...options,
    }).connect(b);
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(a);
    stops.push(() => client.close());
    return {
      buyer,
      call: async (resourceId: string) =>
        (await client.callTool({ name: 'call_paid_resource', arguments: { resourceId } })) as {
          isError?: boolean;
          structuredContent: Record<string, unknown>;
        },
    };
  }

  beforeAll(async () => {
    m = await startMarketplace();
    buyerKey = Keypair.random();
    await m.network.fundAccount(buyerKey.publicKey());
    await m.network.faucet(buyerKey.publicKey(), 'USDC', '5');
  });
  afterAll(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await m?.stop();
  });

  it(
    'when the live 402 asks a higher price than inspected, call_paid_resource refuses before signing ' +
      '(TERMS_CHANGED) and nothing moves',
    async () => {
      const s = await seller('pricey-shop.test', '0.05', () => ({ amount: '0.5' }));
      const a = await agent({ allowPrivateNetworks: true });
      const before = m.network.balance(buyerKey.publicKey(), 'USDC');
      const out = await a.call(s.resourceId);
      expect(out.isError).toBe(true);
      expect(out.structuredContent).toMatchObject({
        error: { code: 'TERMS_CHANGED', message: expect.stringMatching(/amount 0\.5\d*, inspected 0\.05/) },
      });
      expect(a.buyer.budget.committed).toBe('0.0000000');
      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe(before);
      expect(handled).not.toContain('pricey-shop.test');
    },
  );

  it(
    'when the live 402 names another recipient than inspected, ' + 'call_paid_resource refuses before signing',
    async () => {
      const other = Keypair.random().publicKey();
      const s = await seller('switch-shop.test', '0.05', () => ({ payTo: other }));
      const a = await agent({ allowPrivateNetworks: true });
      const out = await a.call(s.resourceId);
      expect(out.structuredContent).toMatchObject({
        error: { code: 'TERMS_CHANGED', message: expect.stringContaining(`recipient ${other}`) },
      });
      expect(a.buyer.budget.committed).toBe('0.0000000');
    },
  );

  it('when the terms match, it pays and reports the amount actually signed', async () => {
    const s = await seller('honest-shop.test', '0.05');
    const a = await agent({ allowPrivateNetworks: true });
    const out = await a.call(s.resourceId);
    expect(out.isError).toBeFalsy();
    expect(out.structuredContent).toMatchObject({
      paid: true,
      amount: '0.0500000',
      result: { status: 200, body: { ok: true, from: 'honest-shop.test' } },
    });
    await eventually(async () => a.buyer.budget.spent === '0.0500000');
  });

  it(
    "when the server is built without perCallLimit, an agent's maxAmount above the buyer's own per-call budget " +
      "cannot raise it (BUDGET_EXCEEDED, nothing moves), and get_budget shows the payer's own limits",
    async () => {
      const s = await seller('raise-limit-shop.test', '0.5');
      const buyer = createBuyerClient({
        baseUrl: m.baseUrl,
        fetch: loopbackFetch,
        payment: { signer: buyerKey, budget: { perCall: '0.1', total: '2' } },
      });
      const [a, b] = InMemoryTransport.createLinkedPair();
      await createMarketplaceMcpServer({
        marketplace: buyer,
        payer: buyer,
        fetch: loopbackFetch,
        allowPrivateNetworks: true,
      }).connect(b);
      const client = new Client({ name: 'agent', version: '1.0.0' });
      await client.connect(a);
      stops.push(() => client.close());
      const before = m.network.balance(buyerKey.publicKey(), 'USDC');
      const out = await client.callTool({
        name: 'call_paid_resource',
        arguments: { resourceId: s.resourceId, maxAmount: '1' },
      });
      expect(out.isError).toBe(true);
      expect(out.structuredContent).toMatchObject({ error: { code: 'BUDGET_EXCEEDED' } });
      expect(m.network.balance(buyerKey.publicKey(), 'USDC')).toBe(before);
      const budget = await client.callTool({ name: 'get_budget', arguments: {} });
      expect(budget.structuredContent).toEqual({
        perCall: '0.1000000',
        total: '2.0000000',
        committed: '0.0000000',
        spent: '0.0000000',
        released: '0.0000000',
        remaining: '2.0000000',
        heldBy: 'server',
      });
    },
  );

  it(
    'by default a seller URL that resolves to a loopback address is refused (ADDRESS_NOT_ALLOWED) before ' +
      'anything is sent',
    async () => {
      const s = await seller('inward-shop.test', '0.05');
      const a = await agent({ lookup: async () => ['127.0.0.1'] });
      const out = await a.call(s.resourceId);
      expect(out.structuredContent).toMatchObject({
        error: { code: 'ADDRESS_NOT_ALLOWED', message: expect.stringMatching(/resolves to 127\.0\.0\.1.*refused/) },
      });
      expect(handled).not.toContain('inward-shop.test');
    },
  );

  it(
    'a redirect hop to a link-local (metadata) address or past ' + '3 hops is refused, each hop checked again',
    async () => {
      let hops = 0;
      const metadata = await seller('redirect-shop.test', '0.05', undefined, (_req, res) =>
        res.redirect(302, 'http://169.254.169.254/latest/meta-data/'),
      );
      const loop = await seller('loop-shop.test', '0.05', undefined, (req, res) => {
        hops++;
        res.redirect(302, `http://loop-shop.test:${req.socket.localPort}/paid`);
      });
      // The seller hosts count as public for the check (a public address), while the test connects them to 127.0.0.1.
      const a = await agent({ lookup: async () => ['93.184.216.34'] });
      expect((await a.call(metadata.resourceId)).structuredContent).toMatchObject({
        error: { code: 'ADDRESS_NOT_ALLOWED', message: expect.stringContaining('169.254.169.254') },
      });
      expect((await a.call(loop.resourceId)).structuredContent).toMatchObject({
        error: {
          code: 'ADDRESS_NOT_ALLOWED',
          message: expect.stringMatching(/More than 3 redirects from loop-shop\.test/),
        },
      });
      expect(hops).toBe(4);
    },
  );

  it(
    'when the seller host cannot be resolved, the agent gets ' + 'UPSTREAM_ERROR with the cause (not INTERNAL_ERROR)',
    async () => {
      const s = await seller('nowhere-shop.test', '0.05');
      // no loopback mapping: .test resolves nowhere
      const a = await agent({ allowPrivateNetworks: true, fetch: globalThis.fetch });
      const out = await a.call(s.resourceId);
      expect(out.structuredContent).toMatchObject({
        error: {
          code: 'UPSTREAM_ERROR',
          message: expect.stringMatching(/nowhere-shop\.test.*ENOTFOUND|EAI_AGAIN/),
          details: { cause: expect.stringMatching(/ENOTFOUND|EAI_AGAIN/) },
        },
      });
    },
  );

  it('private, loopback, link-local and reserved addresses are recognised, public ones are not', () => {
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '224.0.0.1',
    ])
      expect([ip, isPrivateAddress(ip)]).toEqual([ip, true]);
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      expect([ip, isPrivateAddress(ip)]).toEqual([ip, false]);
  });
});
