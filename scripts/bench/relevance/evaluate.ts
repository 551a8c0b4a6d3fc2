/**
 * The relevance bench's parts (issue #21), shared by `npm run bench:relevance` (scripts/bench-relevance.ts) and the
 * recall floor test (server/test/discovery/relevance.test.ts): the judged corpus and queries (text files next to
 * this one), the metrics, and a plain BM25 baseline over name and description computed on the same corpus.
 */
import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { RANKING_STRATEGY } from '../../../server/src/domain/discovery/ranking';

export interface JudgedResource {
  key: string;
  category: string;
  name: string;
  description: string;
  path: string;
}

export interface JudgedQuery {
  query: string;
  /** Grade per category: 2 relevant, 1 partly relevant (missing: 0). */
  grades: Map<string, number>;
}

const HERE = __dirname;

export function loadCorpus(file = path.join(HERE, 'corpus.txt')): JudgedResource[] {
  const out: JudgedResource[] = [];
  let category = '';
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('## ')) category = line.slice(3).trim();
    else if (line.trim() && !line.startsWith('#')) {
      const [name, description, p] = line.split('|').map((s) => s.trim());
      out.push({ key: `${category}#${out.length}`, category, name, description, path: p || `/r${out.length}` });
    }
  }
  return out;
}

export function loadQueries(file = path.join(HERE, 'queries.txt')): JudgedQuery[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => {
      const [query, main, partial] = l.split('|').map((s) => s.trim());
      const grades = new Map<string, number>([[main, 2]]);
      for (const c of (partial ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean))
        grades.set(c, 1);
      return { query, grades };
    });
}

/** A textbook BM25 (k1 1.2, b 0.75) over name + description: lower-case word tokens, OR of the query's words. */
export function bm25(corpus: JudgedResource[]): (q: string) => string[] {
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
      .slice(0, 10)
      .map((x) => x.key);
  };
}

export interface Figures {
  recallAt5: number;
  mrrAt10: number;
  ndcgAt10: number;
  emptyShare: number;
}

/**
 * recall@5: share of queries with a relevant (grade 2) result in the top 5. MRR@10: mean reciprocal rank of the
 * first relevant result within 10. nDCG@10: gains 2^grade - 1 over the ideal ordering of every judged resource.
 */
export function figures(corpus: JudgedResource[], queries: JudgedQuery[], answers: string[][]): Figures {
  const category = new Map(corpus.map((r) => [r.key, r.category]));
  let recall = 0;
  let mrr = 0;
  let ndcg = 0;
  let empty = 0;
  for (const [i, q] of queries.entries()) {
    const ranked = answers[i].slice(0, 10);
    const grade = (key: string) => q.grades.get(category.get(key) ?? '') ?? 0;
    if (ranked.length === 0) empty += 1;
    if (ranked.slice(0, 5).some((k) => grade(k) === 2)) recall += 1;
    const first = ranked.findIndex((k) => grade(k) === 2);
    if (first >= 0) mrr += 1 / (first + 1);
    const dcg = ranked.reduce((a, k, r) => a + (2 ** grade(k) - 1) / Math.log2(r + 2), 0);
    const ideal = corpus
      .map((r) => q.grades.get(r.category) ?? 0)
      .sort((a, b) => b - a)
      .slice(0, 10);
    const idcg = ideal.reduce((a, g, r) => a + (2 ** g - 1) / Math.log2(r + 2), 0);
    ndcg += idcg > 0 ? dcg / idcg : 0;
  }
  const n = queries.length;
  return { recallAt5: recall / n, mrrAt10: mrr / n, ndcgAt10: ndcg / n, emptyShare: empty / n };
}

/**
 * Catalogs the corpus into a running service (one seller per category, its resources on the seller's domain) and
 * answers the resource id -> corpus key map. `signUp` is the test fixture's signUpSeller.
 */
export async function loadIntoService(
  app: Express,
  corpus: JudgedResource[],
  signUp: (app: Express) => Promise<{ id: string; apiKey: string; domain: string; wallet: { publicKey(): string } }>,
  issuer: string,
): Promise<Map<string, string>> {
  const byCategory = new Map<string, JudgedResource[]>();
  for (const r of corpus) byCategory.set(r.category, [...(byCategory.get(r.category) ?? []), r]);
  const keys = new Map<string, string>();
  for (const [, resources] of byCategory) {
    const seller = await signUp(app);
    const used = new Set<string>();
    for (const [i, r] of resources.entries()) {
      // One listing per seller, method and URL: a path a category already used gets a numbered sibling.
      let routeTemplate = r.path.replace(/[^A-Za-z0-9/_{}.-]/g, '') || '/';
      if (used.has(routeTemplate)) routeTemplate = `${routeTemplate.replace(/\/$/, '')}/v${i + 1}`;
      used.add(routeTemplate);
      const res = await request(app)
        .post('/v1/discovery/catalog')
        .set('authorization', `Bearer ${seller.apiKey}`)
        .send({
          sellerId: seller.id,
          resource: {
            type: 'http',
            name: r.name,
            description: r.description,
            url: `https://${seller.domain}${routeTemplate}`,
            routeTemplate,
            network: 'stellar:testnet',
            payTo: seller.wallet.publicKey(),
            assetCode: 'USDC',
            assetIssuer: issuer,
            // Prices vary a little so the static score is not uniform (as in a real catalog).
            amount: (0.001 * (1 + (i % 5))).toFixed(3),
            inputSchema: { type: 'object' },
            outputSchema: { type: 'object' },
            extensions: {},
          },
        });
      if (res.status !== 201) throw new Error(`catalog of ${r.name} failed: ${res.status} ${JSON.stringify(res.body)}`);
      keys.set(res.body.resourceId, r.key);
    }
  }
  return keys;
}

/** Runs every query through GET /v1/discovery/search (limit 10): the ranked corpus keys per query. */
export async function searchAll(app: Express, queries: JudgedQuery[], keys: Map<string, string>): Promise<string[][]> {
  const out: string[][] = [];
  for (const q of queries) {
    const res = await request(app).get('/v1/discovery/search').query({ q: q.query, limit: 10 });
    if (res.status !== 200) throw new Error(`search "${q.query}" answered ${res.status} ${JSON.stringify(res.body)}`);
    out.push((res.body.resources as Array<{ id: string }>).map((r) => keys.get(r.id) ?? r.id));
  }
  return out;
}

export function table(ours: Figures, baseline: Figures): string {
  const row = (name: string, f: Figures) =>
    `| ${name} | ${f.recallAt5.toFixed(3)} | ${f.mrrAt10.toFixed(3)} | ${f.ndcgAt10.toFixed(3)} | ` +
    `${(100 * f.emptyShare).toFixed(1)} % |`;
  return [
    '| | recall@5 | MRR@10 | nDCG@10 | empty answers |',
    '|---|---|---|---|---|',
    row(`ours (${RANKING_STRATEGY})`, ours),
    row('BM25 baseline (name + description)', baseline),
  ].join('\n');
}
