import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { createSafeFetcher } from '../../src/net';
import { toStroops } from '../../src/domain/amount';
import { createSearchIndexRepository } from '../../src/data/search-index-repository';
import { createTrustRepository } from '../../src/data/trust-repository';
import { createLivenessRunner } from '../../src/domain/trust/liveness-runner';
import { nextState } from '../../src/domain/trust/liveness';
import type { LivenessTarget, ProbeOutcome, TrustSettings } from '../../src/domain/trust/types';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestService, type TestService } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { catalog, draft, waitIndexed } from '../discovery/helpers';

/**
 * Issue #33 against real local sellers: one HTTP server answers every seller's host (by Host header) with a 402 the
 * test controls per host: the listed terms, another price, another payout address, a 503, or a closed connection.
 * The liveness worker's pass runs through the SSRF-safe fetcher (allowed to reach loopback), never paying.
 */
interface Endpoint {
  payTo: string;
  amount: string;
  issuer: string;
  mode: 'up' | 'down' | 'reset';
  /** MCP: the tool tools/list lists (http when absent). */
  tool?: string;
}
const endpoints = new Map<string, Endpoint>();
let server: http.Server;
let port = 0;
let svc: TestService;

function requirement(e: Endpoint) {
  return {
    x402Version: 2,
    error: 'PAYMENT_REQUIRED',
    accepts: [
      {
        scheme: 'exact',
        network: 'stellar:testnet',
        amount: toStroops(e.amount).toString(),
        asset: 'CUNKNOWNCONTRACT',
        payTo: e.payTo,
        maxTimeoutSeconds: 300,
        extra: { asset: { code: 'USDC', issuer: e.issuer } },
      },
    ],
  };
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const e = endpoints.get((req.headers.host ?? '').split(':')[0]);
    if (!e) return void res.writeHead(404).end();
    if (e.mode === 'reset') return void req.socket.destroy();
    if (e.mode === 'down') return void res.writeHead(503).end('maintenance');
    if (e.tool) {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        const msg = JSON.parse(raw) as { id: number; method: string };
        const result =
          msg.method === 'tools/list'
            ? { tools: [{ name: e.tool, inputSchema: { type: 'object' } }] }
            : {
                isError: true,
                content: [{ type: 'text', text: JSON.stringify(requirement(e)) }],
                structuredContent: requirement(e),
              };
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
      });
      return;
    }
    const body = JSON.stringify(requirement(e));
    res
      .writeHead(402, { 'content-type': 'application/json', 'payment-required': Buffer.from(body).toString('base64') })
      .end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
  svc = await startTestService({
    runJobs: true,
    jobPollMs: 200,
    trust: {
      liveness: false, // the test runs the worker's pass itself
      settings: {
        intervalMs: 0,
        retryMs: 0,
        droppedIntervalMs: 0,
        perHostIntervalMs: 0,
        failuresToDemote: 2,
        dropAfterMs: 1500,
        concurrency: 4,
        outlierRefreshMs: 0,
      },
      probeFetch: createSafeFetcher({
        allowInsecureForTests: true,
        allowPrivateAddressesForTests: true,
        readBodyOfStatuses: [200, 402],
        timeoutMs: 2000,
        lookup: async () => [{ address: '127.0.0.1', family: 4 }],
      }),
    },
  });
});
afterAll(async () => {
  await svc.stop();
  await new Promise((r) => server.close(r));
});

/** A listing of the seller, served by the local server at its own host; answers its id and host. */
async function listing(
  seller: SignedUpSeller,
  name: string,
  amount = '0.05',
  extra: Record<string, unknown> = {},
): Promise<{ id: string; host: string }> {
  const input = resourceInput(seller, {
    name,
    description: 'Hourly rainfall forecast for any city, paid per call',
    amount,
    ...extra,
  });
  const host = new URL(String(input.url)).hostname;
  const url =
    extra.type === 'mcp'
      ? `http://${host}:${port}/mcp`
      : String(input.url).replace('https://', 'http://').replace(host, `${host}:${port}`);
  const res = await request(svc.app)
    .post('/v1/resources')
    .set(bearer(seller.apiKey))
    .send({ ...input, url });
  if (res.status !== 201) throw new Error(`create failed ${res.status} ${JSON.stringify(res.body)}`);
  const id = (res.body.resource ?? res.body).id as string;
  endpoints.set(host, {
    payTo: seller.wallet.publicKey(),
    amount,
    issuer: String(input.assetIssuer),
    mode: 'up',
    ...(extra.type === 'mcp' ? { tool: 'rainfall' } : {}),
  });
  return { id, host };
}

const pass = () => svc.trust.runner.pass(60_000);
const search = async (q: string, query: Record<string, unknown> = {}) =>
  (
    await request(svc.app)
      .get('/v1/discovery/search')
      .query({ q, ...query })
  ).body;
const ids = async (q: string, query: Record<string, unknown> = {}) =>
  ((await search(q, query)).resources as Array<{ id: string }>).map((r) => r.id);
const trustOf = async (id: string) => (await request(svc.app).get(`/v1/resources/${id}`)).body.trust;
const endpoint = (host: string) => endpoints.get(host)!;

describe('liveness: a seller that goes down', () => {
  it(
    'is demoted after two failed probes, dropped after the configured time, and back in its place when it ' +
      'answers again',
    async () => {
      const honest = await listing(await signUpSeller(svc.app), 'Numbat rainfall forecast');
      const flaky = await listing(await signUpSeller(svc.app), 'Numbat rainfall forecast');
      await waitIndexed(svc.db);
      await pass();
      // Same text, later id first on equal scores: the flaky one leads while both answer.
      expect(await ids('numbat rainfall')).toEqual([flaky.id, honest.id]);
      const live = await trustOf(flaky.id);
      expect(live).toMatchObject({
        live: true,
        uptime7d: 1,
        ownerVerified: true,
        priceDrift: false,
        payoutChanged: false,
        demoted: false,
        checkedAt: expect.any(String),
      });
      expect(live.latency).toEqual({ p50Ms: expect.any(Number), p99Ms: expect.any(Number) });

      endpoint(flaky.host).mode = 'reset';
      await pass();
      expect((await trustOf(flaky.id)).live).toBe(true); // one failure is not yet dead
      endpoint(flaky.host).mode = 'down';
      await pass();
      expect(await trustOf(flaky.id)).toMatchObject({ live: false, demoted: true, uptime7d: 0.333 });
      expect(await ids('numbat rainfall')).toEqual([honest.id, flaky.id]);
      expect(await ids('numbat rainfall', { liveOnly: true })).toEqual([honest.id]);

      await new Promise((r) => setTimeout(r, 1600)); // dropAfterMs 1500
      await pass();
      expect(await ids('numbat rainfall')).toEqual([honest.id]);
      expect(
        (await request(svc.app).get('/v1/discovery/resources')).body.resources.map((r: { id: string }) => r.id),
      ).not.toContain(flaky.id);
      expect((await request(svc.app).get(`/v1/resources/${flaky.id}`)).status).toBe(200);

      endpoint(flaky.host).mode = 'up';
      await pass();
      expect(await trustOf(flaky.id)).toMatchObject({ live: true, demoted: false, uptime7d: 0.4 });
      // Back in results, not demoted; its lower 7-day uptime (2 of 5 probes) now ranks it after the honest one.
      expect(await ids('numbat rainfall')).toEqual([honest.id, flaky.id]);
    },
  );

  it(
    'an MCP tool is live when tools/list lists it and its unpaid call asks for payment, and dead when the server ' +
      'stops answering',
    async () => {
      const seller = await signUpSeller(svc.app);
      const tool = await listing(seller, 'Bilby rainfall tool', '0.05', {
        type: 'mcp',
        routeTemplate: '/mcp',
        extensions: { mcp: { toolName: 'rainfall' } },
      });
      await waitIndexed(svc.db);
      await pass();
      expect(await trustOf(tool.id)).toMatchObject({ live: true, ownerVerified: true });
      endpoint(tool.host).mode = 'down';
      await pass();
      await pass();
      expect(await trustOf(tool.id)).toMatchObject({ live: false, demoted: true });
    },
  );
});

describe('owner and price drift', () => {
  it(
    'a seller whose live 402 raises the price is flagged priceDrift and demoted until it confirms with its own ' +
      'key',
    async () => {
      const honest = await listing(await signUpSeller(svc.app), 'Potoroo rainfall forecast');
      const seller = await signUpSeller(svc.app);
      const drifting = await listing(seller, 'Potoroo rainfall forecast');
      await waitIndexed(svc.db);
      await pass();
      expect(await ids('potoroo')).toEqual([drifting.id, honest.id]);

      endpoint(drifting.host).amount = '0.5';
      await pass();
      expect(await trustOf(drifting.id)).toMatchObject({
        live: true,
        priceDrift: true,
        payoutChanged: false,
        demoted: true,
      });
      expect(await ids('potoroo')).toEqual([honest.id, drifting.id]);
      const [row] = (
        await svc.db.query(
          `SELECT kind, listed, observed, detected_at IS NOT NULL AS dated FROM resource_drift WHERE resource_id ` +
            `= '${drifting.id}'`,
        )
      )[0] as Array<Record<string, unknown>>;
      expect(row).toEqual({ kind: 'price', listed: '0.05', observed: '0.5', dated: true });
      // The observed price is stored as the decimal amount, not as the stroops the probe carries it in.
      const [observed] = (
        await svc.db.query(
          `SELECT observed_amount::text AS amount FROM resource_liveness WHERE resource_id = '${drifting.id}'`,
        )
      )[0] as Array<Record<string, unknown>>;
      expect(observed).toEqual({ amount: '0.5' });

      // Another seller's key, an unauthenticated call: refused; the owner's key confirms.
      const other = await signUpSeller(svc.app);
      expect(
        (
          await request(svc.app)
            .post(`/v1/resources/${drifting.id}/terms-confirmations`)
            .set(bearer(other.apiKey))
            .send({})
        ).status,
      ).toBe(403);
      expect((await request(svc.app).post(`/v1/resources/${drifting.id}/terms-confirmations`).send({})).status).toBe(
        401,
      );
      expect(
        (
          await request(svc.app)
            .post(`/v1/resources/${drifting.id}/terms-confirmations`)
            .set(bearer(seller.apiKey))
            .send({ kind: 'bogus' })
        ).status,
      ).toBe(400);
      const confirmed = await request(svc.app)
        .post(`/v1/resources/${drifting.id}/terms-confirmations`)
        .set(bearer(seller.apiKey))
        .send({ kind: 'price' });
      expect(confirmed.status).toBe(200);
      expect(confirmed.body).toMatchObject({
        resourceId: drifting.id,
        confirmed: 1,
        trust: { priceDrift: false, demoted: false },
      });
      // The same observed price is not flagged again; a different one is.
      await pass();
      expect((await trustOf(drifting.id)).priceDrift).toBe(false);
      endpoint(drifting.host).amount = '5';
      await pass();
      expect((await trustOf(drifting.id)).priceDrift).toBe(true);
      // Back to the listed price: the change is over without a confirmation.
      endpoint(drifting.host).amount = '0.05';
      await pass();
      expect(await trustOf(drifting.id)).toMatchObject({ priceDrift: false, demoted: false });
    },
  );

  it(
    'a seller whose live 402 pays another address is flagged payoutChanged, not owner-verified, and left out by ' +
      'verifiedOnly',
    async () => {
      const seller = await signUpSeller(svc.app);
      const hijacked = await listing(seller, 'Quokka rainfall forecast');
      await waitIndexed(svc.db);
      await pass();
      endpoint(hijacked.host).payTo = Keypair.random().publicKey();
      await pass();
      expect(await trustOf(hijacked.id)).toMatchObject({
        live: true,
        ownerVerified: false,
        payoutChanged: true,
        demoted: true,
      });
      expect(await ids('quokka', { verifiedOnly: true })).toEqual([]);
      expect(await ids('quokka', { liveOnly: true })).toEqual([hijacked.id]);
      expect(await ids('quokka', { minUptime: 0.5 })).toEqual([hijacked.id]);
    },
  );
});

describe('filters are applied or refused, never ignored', () => {
  it('minUptime outside 0..1, a non-boolean liveOnly or verifiedOnly, answer 400 in the error envelope', async () => {
    for (const query of [{ minUptime: 2 }, { minUptime: 'high' }, { liveOnly: 'yes' }, { verifiedOnly: 'maybe' }]) {
      const res = await request(svc.app)
        .get('/v1/discovery/search')
        .query({ q: 'rainfall', ...query });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
      expect((await request(svc.app).get('/v1/discovery/resources').query(query)).status).toBe(400);
    }
  });

  it('a listing never probed has no measured uptime and is left out by minUptime and liveOnly', async () => {
    const fresh = await listing(await signUpSeller(svc.app), 'Dunnart rainfall forecast');
    await waitIndexed(svc.db);
    expect(await ids('dunnart')).toEqual([fresh.id]);
    expect((await search('dunnart')).resources[0].trust).toMatchObject({ live: null, uptime7d: null, checkedAt: null });
    expect(await ids('dunnart', { minUptime: 0 })).toEqual([]);
    expect(await ids('dunnart', { liveOnly: true })).toEqual([]);
    expect(await ids('dunnart', { liveOnly: false })).toEqual([fresh.id]);
  });
});

describe('honest prices', () => {
  it(
    'a decoy priced far above comparable listings is flagged ' + 'priceOutlier and ranks below every honest listing',
    async () => {
      const honest: string[] = [];
      for (let i = 0; i < 6; i++)
        honest.push((await listing(await signUpSeller(svc.app), 'Wallaroo rainfall forecast', '0.05')).id);
      const decoy = await listing(await signUpSeller(svc.app), 'Wallaroo rainfall forecast', '1000');
      await waitIndexed(svc.db);
      await pass();
      expect(await trustOf(decoy.id)).toMatchObject({ priceOutlier: true, demoted: true });
      const ranked = await ids('wallaroo');
      expect(ranked[ranked.length - 1]).toBe(decoy.id);
      expect(ranked.slice(0, 6).sort()).toEqual([...honest].sort());
    },
  );
});

describe('demand no seller can buy', () => {
  it(
    'self-dealing payers (the seller wallet, another payTo of the seller, a payer the payee funded) count ' +
      'nothing and a listing paid mostly by them is demoted; honest payers count',
    async () => {
      const seller = await signUpSeller(svc.app);
      const target = await listing(seller, 'Bettong rainfall forecast', '0.05');
      // A second listing of the same seller, paid to another wallet it declared (payer and payTo controlled together).
      const declared = await catalog(svc.app, seller.apiKey, {
        sellerId: seller.id,
        payToDeclared: true,
        resource: draft(seller, { name: 'Bettong second api', payTo: Keypair.random().publicKey(), amount: '0.05' }),
      });
      expect(declared.status).toBe(201);
      const second = { id: declared.body.resourceId as string };
      await waitIndexed(svc.db);
      const settled = async (resourceId: string, payer: string, payTo?: string) => {
        await svc.db.query(
          `INSERT INTO payment_attempts (id, resource_id, version_id, seller_id, payment_hash, network, payer,
          nonce, asset_code, asset_issuer,
           amount, pay_to, status, expires_at_ledger, authorization_xdr)
         SELECT :id, r.id, r.current_version_id, r.seller_id, 'h', 'stellar:testnet', :payer, :nonce,
           r.asset_code, r.asset_issuer, r.amount, COALESCE(:payTo, r.pay_to), 'settled', 100, 'AAAA'
           FROM resources r WHERE r.id = :resourceId`,
          {
            replacements: {
              id: `pay_${Keypair.random().publicKey().slice(1, 27)}`,
              payer,
              nonce: Keypair.random().publicKey(),
              payTo: payTo ?? null,
              resourceId,
            },
          },
        );
      };
      const [{ payTo: secondPayTo }] = (
        await svc.db.query(`SELECT pay_to AS "payTo" FROM resources WHERE id = '${second.id}'`)
      )[0] as Array<{ payTo: string }>;
      const funded = Keypair.random().publicKey();
      const honestPayer = Keypair.random().publicKey();
      await settled(target.id, seller.wallet.publicKey()); // the seller's own wallet
      await settled(target.id, secondPayTo); // another payTo of the same seller
      await settled(target.id, funded); // a payer the payee paid through us (circular flow)
      await settled(second.id, seller.wallet.publicKey(), funded); // ... here: the payee's wallet paid `funded`
      await settled(target.id, honestPayer);
      await createSearchIndexRepository(svc.db).refreshSignals();
      // 3 of its 4 settled calls are self-dealt: flagged and demoted; an honest listing with one honest payer is not.
      expect(await trustOf(target.id)).toMatchObject({
        payers30d: 1,
        calls30d: 4,
        settledByUs: true,
        selfDealing: true,
        demoted: true,
      });
    },
  );
});

describe('diversity', () => {
  it('at most two results of one origin in the top 10, unless the query names the origin', async () => {
    const big = await signUpSeller(svc.app, { domain: 'kowaridata.example' });
    const mine: string[] = [];
    // The big seller's listings share one origin: all on its own domain, different paths.
    for (let i = 0; i < 5; i++) {
      const input = resourceInput(big, {
        name: `Kowari rainfall forecast ${i}`,
        description: 'Hourly rainfall forecast for any city, paid per call',
      });
      const res = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(big.apiKey))
        .send({
          ...input,
          url: `https://kowaridata.example/v${i}/forecast/{city}`,
          routeTemplate: `/v${i}/forecast/{city}`,
        });
      expect(res.status).toBe(201);
      mine.push((res.body.resource ?? res.body).id);
    }
    for (let i = 0; i < 10; i++) await listing(await signUpSeller(svc.app), `Kowari rain ${i}`);
    await waitIndexed(svc.db);
    const top = (await search('kowari rainfall forecast')).resources.slice(0, 10) as Array<{ id: string }>;
    expect(top.filter((r) => mine.includes(r.id))).toHaveLength(2);
    const named = (await search('kowaridata rainfall forecast')).resources.slice(0, 10) as Array<{ id: string }>;
    expect(named.filter((r) => mine.includes(r.id)).length).toBeGreaterThan(2);
  });
});

describe('the trust block is shown', () => {
  it('on search results, the discovery listing, GET /v1/resources/{id} and the x402 Bazaar list', async () => {
    const item = await listing(await signUpSeller(svc.app), 'Antechinus rainfall forecast');
    await waitIndexed(svc.db);
    await pass();
    const expected = {
      live: true,
      domainVerified: false,
      priceDrift: false,
      payoutChanged: false,
      priceOutlier: false,
      selfDealing: false,
      demoted: false,
      payers30d: 0,
      calls30d: 0,
      settledByUs: false,
    };
    expect((await search('antechinus')).resources[0].trust).toMatchObject(expected);
    const listed = (await request(svc.app).get('/v1/discovery/resources')).body.resources.find(
      (r: { id: string }) => r.id === item.id,
    );
    expect(listed.trust).toMatchObject(expected);
    expect(await trustOf(item.id)).toMatchObject(expected);
    const bazaar = (await request(svc.app).get('/x402/discovery/resources').query({ limit: 100 })).body.items.find(
      (i: { metadata: { resourceId?: string } }) => i.metadata.resourceId === item.id,
    );
    expect(bazaar.metadata.trust).toMatchObject(expected);

    // The MCP search tool, through a stock MCP client over real HTTP.
    const listening = await new Promise<http.Server>((r) => {
      const s = svc.app.listen(0, '127.0.0.1', () => r(s));
    });
    const client = new Client({ name: 'trust-test-agent', version: '1.0.0' });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${(listening.address() as AddressInfo).port}/mcp`)),
      );
      const found = (await client.request(
        { method: 'tools/call', params: { name: 'search_resources', arguments: { q: 'antechinus' } } },
        CallToolResultSchema,
      )) as CallToolResult;
      const page = found.structuredContent as { resources: Array<{ id: string; trust: unknown }> };
      expect(page.resources.find((r) => r.id === item.id)?.trust).toMatchObject(expected);
    } finally {
      await client.close();
      listening.closeAllConnections();
      await new Promise((r) => listening.close(r));
    }
  });
});

describe('batched outcome writes (100k listings: one statement per batch, claims compared and set)', () => {
  const probeFetch = createSafeFetcher({
    allowInsecureForTests: true,
    allowPrivateAddressesForTests: true,
    readBodyOfStatuses: [200, 402],
    timeoutMs: 2000,
    lookup: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  /** A worker of its own (its own per-host memory, as another process has), writing `writeBatch` outcomes at once. */
  const worker = (writeBatch: number, extra: Partial<TrustSettings> = {}) =>
    createLivenessRunner({
      repo: createTrustRepository(svc.db),
      fetch: probeFetch,
      contractId: () => null,
      settings: {
        ...svc.trust.settings,
        writeBatch,
        writeDelayMs: 50,
        intervalMs: 0,
        retryMs: 0,
        perHostIntervalMs: 0,
        ...extra,
      },
    });
  const probesCounted = async (ids?: string[]) => {
    const [[row]] = (await svc.db.query(
      `SELECT COALESCE(sum(probes), 0)::int AS n FROM resource_liveness_days
        WHERE $1::text[] IS NULL OR resource_id = ANY($1::text[])`,
      { bind: [ids ?? null] },
    )) as [Array<{ n: number }>, unknown];
    return row.n;
  };

  it(
    'sellers that go down are demoted after two passes written in batches of 2, the others untouched, and come ' +
      'back when they answer again',
    async () => {
      const items: Array<{ id: string; host: string }> = [];
      for (let i = 0; i < 7; i++) items.push(await listing(await signUpSeller(svc.app), `Quokka hail outlook ${i}`));
      await waitIndexed(svc.db);
      const w = worker(2);
      const first = await w.pass();
      expect(first.refused).toBe(0);
      expect(first.written).toBe(first.probed);
      for (const x of items) expect(await trustOf(x.id)).toMatchObject({ live: true, demoted: false });

      const down = items.slice(0, 3);
      for (const d of down) endpoint(d.host).mode = 'down';
      await w.pass();
      for (const d of down) expect((await trustOf(d.id)).live).toBe(true); // one failure: a suspect, not dead
      await w.pass();
      for (const d of down) expect(await trustOf(d.id)).toMatchObject({ live: false, demoted: true });
      for (const up of items.slice(3)) expect(await trustOf(up.id)).toMatchObject({ live: true, demoted: false });
      // Among these listings (the query may also match other tests' ones), the three down rank last.
      const ours = async (query: Record<string, unknown> = {}) =>
        (await ids('quokka hail outlook', query)).filter((id) => items.some((x) => x.id === id));
      const top = await ours();
      expect(top).toHaveLength(7);
      expect(top.slice(-3).sort()).toEqual(down.map((d) => d.id).sort());
      expect(await ours({ liveOnly: true })).toHaveLength(4);
      // Every probe of these listings counted once: 3 passes of 7.
      expect(await probesCounted(items.map((x) => x.id))).toBe(21);

      for (const d of down) endpoint(d.host).mode = 'up';
      await w.pass();
      for (const d of down) expect(await trustOf(d.id)).toMatchObject({ live: true, demoted: false });
      expect(await ours({ liveOnly: true })).toHaveLength(7);
    },
  );

  it('a listing that keeps answering the same way costs no search document write after its first probe', async () => {
    const steady = await listing(await signUpSeller(svc.app), 'Bilby frost outlook');
    await waitIndexed(svc.db);
    const repo = createTrustRepository(svc.db);
    const changes: number[] = [];
    const w = createLivenessRunner({
      repo: {
        ...repo,
        async recordBatch(outcomes) {
          const r = await repo.recordBatch(outcomes);
          if (outcomes.some((o) => o.target.id === steady.id)) changes.push(r.flagsChanged);
          return r;
        },
      },
      fetch: probeFetch,
      contractId: () => null,
      settings: { ...svc.trust.settings, writeBatch: 1, intervalMs: 0, retryMs: 0, perHostIntervalMs: 0 },
    });
    await w.pass();
    await w.pass();
    await w.pass();
    expect(changes).toEqual([1, 0, 0]);
  });

  it('two workers passing at once never probe-count one outcome twice nor lose one', async () => {
    const items: Array<{ id: string; host: string }> = [];
    for (let i = 0; i < 12; i++) items.push(await listing(await signUpSeller(svc.app), `Dunnart fog outlook ${i}`));
    await waitIndexed(svc.db);
    const before = await probesCounted();
    // Each claims its own listings (a claimed listing is not due for the other until its lease ends).
    // A written listing is not due again within the test (interval 1 minute): each listing is probed once.
    const [a, b] = await Promise.all([
      worker(3, { intervalMs: 60_000, maxPerMinute: 100_000 }).pass(),
      worker(5, { intervalMs: 60_000 }).pass(),
    ]);
    expect(a.refused + b.refused).toBe(0);
    expect(a.written).toBe(a.probed);
    expect(b.written).toBe(b.probed);
    expect(await probesCounted()).toBe(before + a.written + b.written);
    // Every listing of this test was probed by exactly one of them and counted once.
    expect(await probesCounted(items.map((x) => x.id))).toBe(12);
  });

  it(
    'a stale worker whose lease ended writes nothing over the outcome of the worker that claimed the listing ' +
      'after it, and a claim never written (the process died) is probed again once its lease ends',
    async () => {
      const item = await listing(await signUpSeller(svc.app), 'Wombat drizzle outlook');
      await waitIndexed(svc.db);
      const repo = createTrustRepository(svc.db);
      await worker(100).pass(); // the listing is probed once
      const before = await probesCounted([item.id]);
      const outcome = (t: LivenessTarget, live: boolean): ProbeOutcome => {
        const obs = { live, reason: live ? null : 'NOT_402', latencyMs: 5, payTo: t.payTo, amount: t.amount };
        return { target: t, obs, drift: [], state: nextState(t.state, obs, new Date(), svc.trust.settings) };
      };
      const mine = (ts: LivenessTarget[]) => ts.find((t) => t.id === item.id)!;
      // Worker 1 claims with a lease that has already ended (it stalled, or died), then worker 2 claims the same.
      const stale = mine(await repo.claimDue(1000, new Date(), new Date(Date.now() - 1000)));
      const fresh = mine(await repo.claimDue(1000, new Date(), new Date(Date.now() + 60_000)));
      expect(fresh.claim).not.toBe(stale.claim);
      expect((await repo.recordBatch([outcome(fresh, true)])).written).toEqual([item.id]);
      // The stale outcome (a failure) arrives late: refused, not counted, the state stays worker 2's.
      expect((await repo.recordBatch([outcome(stale, false)])).written).toEqual([]);
      // Written twice (a retried statement whose answer was lost): refused the second time.
      expect((await repo.recordBatch([outcome(fresh, true)])).written).toEqual([]);
      expect(await probesCounted([item.id])).toBe(before + 1);
      expect((await trustOf(item.id)).live).toBe(true);
      const [[row]] = (await svc.db.query(
        `SELECT consecutive_failures AS f FROM resource_liveness WHERE resource_id = $1`,
        { bind: [item.id] },
      )) as [Array<{ f: number }>, unknown];
      expect(row.f).toBe(0);

      // A claim whose outcome is never written: not due while leased, due again once the lease ends.
      const leased = mine(await repo.claimDue(1000, new Date(), new Date(Date.now() + 800)));
      expect(leased).toBeDefined();
      expect((await repo.claimDue(1000, new Date(), new Date(Date.now() + 60_000))).map((t) => t.id)).not.toContain(
        item.id,
      );
      await new Promise((r) => setTimeout(r, 900));
      await worker(100).pass();
      expect(await probesCounted([item.id])).toBe(before + 2);
    },
  );
});
