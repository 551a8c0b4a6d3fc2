/**
 * npm run bench:trust — the judged trust set (scripts/bench/trust/: set.txt, queries.txt; issue #33) through the real
 * service (an embedded PostgreSQL of its own, the resources API, the indexing worker, the liveness worker's pass
 * against one local HTTP server playing every seller, GET /v1/discovery/search), and a plain BM25 over name and
 * description (relevance alone) on the same set in the same run. Prints, for both, the share of bad listings in the
 * top 5 and top 20 of every query, the queries with a bad listing in their top 5, and recall@5 of the honest listings
 * (the queries with an honest listing of their topic in the top 5, as bench:relevance counts recall@5), compared with
 * BENCH_RELEVANCE_RECALL5 (bench:relevance's figure) when given. With BENCH_TRUST_DETAIL=1 also each query's top 5.
 *
 * Set-up, local simulation: every listing has its own seller and host on 127.0.0.1; `dead` hosts answer 503,
 * `drifting` ones a 402 at ten times the listed price; `squatting` listings sit under the domain of a topic's first
 * honest seller, which is then marked verified in the bench database (the domain check itself is tested in
 * server/test/domain-verification/); `selfdealt` listings get 20 settled payments at their price from wallets their
 * seller controls (its own wallet, and a wallet it paid through us), written as the facilitator records them.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startEmbeddedDatabase } from '../server/src/data/embedded-database';
import { tempDir } from './bench/processes';

interface Listing {
  key: string;
  kind: string;
  topic: string;
  amount: string;
  name: string;
  description: string;
}
const HERE = path.join(__dirname, 'bench', 'trust');
const rows = (file: string) =>
  fs
    .readFileSync(path.join(HERE, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));
const set: Listing[] = rows('set.txt').map((l) => {
  const [key, kind, topic, amount, name, description] = l.split(' | ').map((x) => x.trim());
  return { key, kind, topic, amount, name, description };
});
const queries = rows('queries.txt');
const topicOf = (q: string) =>
  set.find((l) => l.kind === 'honest' && q.split(' ').some((w) => l.topic.startsWith(w.slice(0, 4))))?.topic ?? '';

function bm25(corpus: Listing[]): (q: string) => string[] {
  const tok = (s: string) => s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  const docs = corpus.map((r) => tok(`${r.name} ${r.description}`));
  const avg = docs.reduce((a, d) => a + d.length, 0) / docs.length;
  const df = new Map<string, number>();
  for (const d of docs) for (const t of new Set(d)) df.set(t, (df.get(t) ?? 0) + 1);
  const idf = (t: string) => Math.log(1 + (docs.length - (df.get(t) ?? 0) + 0.5) / ((df.get(t) ?? 0) + 0.5));
  return (q) => {
    const terms = [...new Set(tok(q))];
    const scored = docs.map((d, i) => {
      let s = 0;
      for (const t of terms) {
        const f = d.filter((x) => x === t).length;
        if (f) s += (idf(t) * f * 2.2) / (f + 1.2 * (1 - 0.75 + (0.75 * d.length) / avg));
      }
      return { key: corpus[i].key, s };
    });
    return scored
      .filter((x) => x.s > 0)
      .sort((a, b) => b.s - a.s)
      .slice(0, 20)
      .map((x) => x.key);
  };
}

function figures(answers: string[][]) {
  const kind = new Map(set.map((l) => [l.key, l]));
  const bad = (k: string) => kind.get(k)?.kind !== 'honest';
  const share = (n: number) => {
    const shown = answers.flatMap((a) => a.slice(0, n));
    return shown.length ? shown.filter(bad).length / shown.length : 0;
  };
  return {
    bad5: share(5),
    bad20: share(20),
    queriesWithBad5: answers.filter((a) => a.slice(0, 5).some(bad)).length,
    honestRecall5:
      answers.filter((a, i) => a.slice(0, 5).some((k) => !bad(k) && kind.get(k)?.topic === topicOf(queries[i])))
        .length / answers.length,
  };
}

async function main() {
  const pg = await startEmbeddedDatabase({ dataDir: path.join(tempDir('bench-trust-pg-'), 'data'), persistent: false });
  process.env.TEST_ADMIN_DATABASE_URL = pg.adminUrl;
  const { startTestService } = await import('../server/test/support/test-service');
  const { signUpSeller, bearer, resourceInput } = await import('../server/test/support/fixtures');
  const { createSafeFetcher } = await import('../server/src/net');
  const { toStroops } = await import('../server/src/domain/amount');
  const { createSearchIndexRepository } = await import('../server/src/data/search-index-repository');

  const hosts = new Map<string, { payTo: string; amount: string; issuer: string; mode: 'up' | 'down' }>();
  const sellerServer = http.createServer((req, res) => {
    const e = hosts.get((req.headers.host ?? '').split(':')[0]);
    if (!e) return void res.writeHead(404).end();
    if (e.mode === 'down') return void res.writeHead(503).end();
    const body = JSON.stringify({
      x402Version: 2,
      accepts: [
        {
          scheme: 'exact',
          network: 'stellar:testnet',
          amount: toStroops(e.amount).toString(),
          payTo: e.payTo,
          maxTimeoutSeconds: 300,
          extra: { asset: { code: 'USDC', issuer: e.issuer } },
        },
      ],
    });
    res.writeHead(402, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => sellerServer.listen(0, '127.0.0.1', () => r()));
  const port = (sellerServer.address() as AddressInfo).port;

  const svc = await startTestService({
    runJobs: true,
    jobPollMs: 100,
    rateLimit: { points: 100_000, windowSeconds: 60 },
    responseValidation: false,
    challengeLimit: { perClient: 100_000, perWallet: 100 },
    trust: {
      liveness: false,
      settings: {
        intervalMs: 0,
        retryMs: 0,
        perHostIntervalMs: 0,
        maxPerMinute: 100_000,
        concurrency: 16,
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
  try {
    const ids = new Map<string, string>();
    const owners = new Map<string, { sellerId: string; wallet: string }>();
    console.error(
      `cataloging ${set.length} listings (${set.filter((l) => l.kind !== 'honest').length} planted bad), ` +
        `${queries.length} queries`,
    );
    for (const l of set) {
      const domain =
        l.kind === 'squatting'
          ? `api.${l.topic}co.example`
          : l.key.endsWith('-h0')
            ? `${l.topic}co.example`
            : `${l.key}.example`;
      const seller = await signUpSeller(svc.app, { domain });
      const input = resourceInput(seller, { name: l.name, description: l.description, amount: l.amount });
      const url = `http://${domain}:${port}/v1/${l.topic}`;
      const res = await request(svc.app)
        .post('/v1/resources')
        .set(bearer(seller.apiKey))
        .send({
          ...input,
          url,
          routeTemplate: `/v1/${l.topic}`,
          inputSchema: { type: 'object' },
          outputSchema: { type: 'object' },
        });
      if (res.status !== 201) throw new Error(`${l.key}: ${res.status} ${JSON.stringify(res.body)}`);
      ids.set((res.body.resource ?? res.body).id, l.key);
      owners.set(l.key, { sellerId: seller.id, wallet: seller.wallet.publicKey() });
      hosts.set(domain, {
        payTo: seller.wallet.publicKey(),
        amount: l.kind === 'drifting' ? String(Number(l.amount) * 10) : l.amount,
        issuer: String(input.assetIssuer),
        mode: l.kind === 'dead' ? 'down' : 'up',
      });
    }
    for (;;) {
      const [[row]] = (await svc.db.query(
        'SELECT count(*)::int AS n FROM catalog_events WHERE indexed_at IS NULL',
      )) as [Array<{ n: number }>, unknown];
      if (row.n === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // The topic owners prove their domains (squatters sit under them); self-dealers pay themselves.
    await svc.db.query(
      `UPDATE sellers SET domain_verified_at = now() WHERE domain LIKE '%co.example' AND domain NOT LIKE 'api.%'`,
    );
    const byKey = new Map([...ids].map(([id, key]) => [key, id]));
    for (const l of set.filter((x) => x.kind === 'selfdealt')) {
      const o = owners.get(l.key)!;
      const mule = Keypair.random().publicKey();
      // The payee funds a mule through us (a settled payment from the payee to the mule), then both pay the listing.
      const pay = (payer: string, payTo: string | null, resourceId: string) =>
        svc.db.query(
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
              payTo,
              resourceId,
            },
          },
        );
      await pay(o.wallet, mule, byKey.get(l.key)!);
      for (let i = 0; i < 10; i++) await pay(o.wallet, null, byKey.get(l.key)!);
      for (let i = 0; i < 10; i++) await pay(mule, null, byKey.get(l.key)!);
    }
    const index = createSearchIndexRepository(svc.db);
    // Two liveness passes: dead listings fail twice (demoted), drifting ones are recorded; then the signals.
    const t0 = Date.now();
    for (let i = 0; i < 2; i++) await svc.trust.runner.pass(60_000);
    const passMs = Date.now() - t0;
    await index.refreshSignals();
    await index.refreshVocabulary(0);
    await svc.db.query('ANALYZE search_documents');

    const ours: string[][] = [];
    for (const q of queries) {
      const res = await request(svc.app).get('/v1/discovery/search').query({ q, limit: 20 });
      if (res.status !== 200) throw new Error(`search "${q}" answered ${res.status}`);
      ours.push((res.body.resources as Array<{ id: string }>).map((r) => ids.get(r.id) ?? r.id));
    }
    const baseline = bm25(set);
    const base = queries.map((q) => baseline(q));
    if (process.env.BENCH_TRUST_DETAIL) {
      for (const [i, q] of queries.entries())
        console.log(`${q}\n  ours: ${ours[i].slice(0, 5).join(', ')}\n  bm25: ${base[i].slice(0, 5).join(', ')}`);
    }
    const f = (name: string, x: ReturnType<typeof figures>) =>
      `| ${name} | ${(100 * x.bad5).toFixed(1)} % | ${(100 * x.bad20).toFixed(1)} % | ${x.queriesWithBad5} of ` +
      `${queries.length} | ${x.honestRecall5.toFixed(3)} |`;
    const oursF = figures(ours);
    const baseF = figures(base);
    console.log(`liveness: 2 passes over ${set.length} listings in ${passMs} ms (local simulation)`);
    console.log(
      [
        '| | bad in top 5 | bad in top 20 | queries with a bad listing in the top 5 | recall@5 (honest listings) |',
        '|---|---|---|---|---|',
        f('ours (trust signals)', oursF),
        f('relevance alone (BM25, name + description)', baseF),
      ].join('\n'),
    );
    // recall@5 as bench:relevance counts it (scripts/bench/relevance/evaluate.ts): the share of queries with a
    // relevant result (here an honest listing of the query's topic) in the top 5. The target: no lower than
    // bench:relevance's, passed as BENCH_RELEVANCE_RECALL5 (its "ours" recall@5) to be compared here.
    const floor = process.env.BENCH_RELEVANCE_RECALL5 ? Number(process.env.BENCH_RELEVANCE_RECALL5) : null;
    console.log(
      floor === null
        ? `recall@5 of honest listings: ours ${oursF.honestRecall5.toFixed(3)} (set BENCH_RELEVANCE_RECALL5 to ` +
            `bench:relevance's recall@5 to compare)`
        : `recall@5 of honest listings: ours ${oursF.honestRecall5.toFixed(3)}, bench:relevance's ` +
            `${floor.toFixed(3)}: ${oursF.honestRecall5 >= floor ? 'no lower (target met)' : 'LOWER (target missed)'}`,
    );
    console.log(
      `bad listings in any top 5: ${oursF.queriesWithBad5} of ${queries.length} queries (target 0); ` +
        `ratio bad-in-top-5 ours ÷ relevance alone: ${baseF.bad5 > 0 ? (oursF.bad5 / baseF.bad5).toFixed(2) : 'n/a'}`,
    );
  } finally {
    await svc.stop();
    await pg.stop();
    await new Promise((r) => sellerServer.close(r));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
