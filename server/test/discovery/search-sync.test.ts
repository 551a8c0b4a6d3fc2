import request from 'supertest';
import { startTestService, type TestService } from '../support/test-service';
import { signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { createSearchIndexRepository } from '../../src/data/search-index-repository';
import { catalog, draft, LONG, waitIndexed } from './helpers';

let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  svc = await startTestService({ runJobs: true, jobPollMs: 200 });
  seller = await signUpSeller(svc.app);
  for (const name of ['Sync weather one', 'Sync weather two', 'Sync weather three']) {
    const res = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resource: draft(seller, {
        name,
        description: LONG,
        url: `https://${seller.domain}/v1/${name.split(' ').pop()}/{city}`,
        routeTemplate: `/v1/${name.split(' ').pop()}/{city}`,
      }),
    });
    expect(res.status).toBe(201);
  }
  await waitIndexed(svc.db);
});
afterAll(async () => {
  await svc.stop();
});

async function versions(): Promise<Record<string, string>> {
  const [rows] = (await svc.db.query('SELECT resource_id, xmin::text AS v FROM search_documents')) as [
    Array<{ resource_id: string; v: string }>,
    unknown,
  ];
  return Object.fromEntries(rows.map((r) => [r.resource_id, r.v]));
}

describe('search-sync rewrites only changed search documents', () => {
  it(
    'a pass with nothing changed writes no document; a change rewrites only the documents it touches; search ' +
      'stays fresh',
    async () => {
      const index = createSearchIndexRepository(svc.db);
      await index.refreshSignals();
      const before = await versions();
      expect(Object.keys(before)).toHaveLength(3);

      expect(await index.refreshSignals()).toBe(0);
      expect(await versions()).toEqual(before);

      // The seller's domain gets verified: every document of that seller changes signal, and only those are rewritten.
      const other = await signUpSeller(svc.app);
      const res = await catalog(svc.app, other.apiKey, {
        sellerId: other.id,
        resource: draft(other, { name: 'Sync weather other', description: LONG }),
      });
      expect(res.status).toBe(201);
      await waitIndexed(svc.db);
      const withOther = await versions();
      await svc.db.query(`UPDATE sellers SET domain_verified_at = now() WHERE id = '${seller.id}'`);
      await index.refreshSignals(); // (the worker's own pass may have done it first: the outcome is the same)
      const after = await versions();
      for (const id of Object.keys(before)) expect(after[id]).not.toBe(withOther[id]);
      expect(after[res.body.resourceId]).toBe(withOther[res.body.resourceId]);

      // Documents not rewritten for a long time are still fresh, because the pass that checked them is recent.
      await svc.db.query(`UPDATE search_documents SET signals_refreshed_at = now() - interval '2 hours'`);
      await index.refreshSignals();
      const page = await request(svc.app).get('/v1/discovery/search').query({ q: 'weather' });
      expect(page.status).toBe(200);
      expect(page.body.resources.length).toBeGreaterThan(0);
      expect(page.body.partialResults).toBe(false);
    },
  );
});
