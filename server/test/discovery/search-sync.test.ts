import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, type TestService } from '../support/test-service';
import { signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { createSearchIndexRepository } from '../../src/data/search-index-repository';
import { SEARCH_SYNC_WORKER } from '../../src/jobs/search-sync-worker';
import { loadConfig } from '../../src/config';
import { catalog, draft, LONG, waitIndexed } from './helpers';

let svc: TestService;
let seller: SignedUpSeller;
beforeAll(async () => {
  // The worker's pass runs once at start, then not for an hour (SEARCH_SYNC_INTERVAL_SECONDS): the passes this file
  // runs itself never interleave with one of its own (see afterWorkerPass).
  svc = await startTestService({ runJobs: true, jobPollMs: 200, discovery: { searchSyncEvery: '1 hour' } });
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

describe('the incremental search-sync pass (issue 31)', () => {
  const one = async <T>(sql: string): Promise<T> => ((await svc.db.query(sql)) as [T[], unknown])[0][0];
  const count = async (id: string) =>
    (await one<{ n: number }>(`SELECT settlement_count AS n FROM search_documents WHERE resource_id = '${id}'`)).n;
  const settled = (resourceId: string, at = 'now()') =>
    svc.db.query(
      `INSERT INTO payment_attempts (id, resource_id, version_id, seller_id, payment_hash, network, payer, nonce,
         asset_code, asset_issuer, amount, pay_to, status, expires_at_ledger, authorization_xdr, created_at, updated_at)
       SELECT :id, r.id, r.current_version_id, r.seller_id, 'h', 'stellar:testnet', :payer, :payer, r.asset_code,
         r.asset_issuer, r.amount, r.pay_to, 'settled', 100, 'AAAA', ${at}, ${at}
         FROM resources r WHERE r.id = :resourceId`,
      {
        replacements: {
          id: `pay_${Keypair.random().publicKey().slice(1, 27)}`,
          payer: Keypair.random().publicKey(),
          resourceId,
        },
      },
    );
  /**
   * Waits until the worker's own pass at start has finished (its next is an hour away), so the passes below do not
   * interleave with it: the job system's figures for the worker, one completed run and none running.
   */
  const afterWorkerPass = async () => {
    const figure = async (name: 'completed' | 'active') =>
      (await svc.metrics.jobs[name].get()).values.find((v) => v.labels.worker === SEARCH_SYNC_WORKER)?.value ?? 0;
    const until = Date.now() + 60_000;
    while ((await figure('completed')) < 1 || (await figure('active')) > 0) {
      if (Date.now() > until) throw new Error('the search-sync worker finished no pass within 60 s of its start');
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  // The rolling audit's next slice starts past every document, so a pass re-checks only what changed.
  const noAudit = () => svc.db.query("UPDATE search_signal_sync SET audit_after = 'res_ZZZZ' WHERE id = 1");

  it(
    'recomputes the documents whose inputs changed and no other; a payment leaving the 30-day window counts ' +
      'out with no write marking it; the rolling audit re-checks the rest',
    async () => {
      const index = createSearchIndexRepository(svc.db);
      const [paid, tampered, aged] = Object.keys(await versions()).sort();
      await afterWorkerPass();
      await noAudit();
      // No input of `tampered` changed: its stored signal stays as it is (the pass does not look at it).
      await svc.db.query(`UPDATE search_documents SET settlement_count = 7 WHERE resource_id = '${tampered}'`);
      await settled(paid);
      await index.refreshSignals();
      expect(await count(paid)).toBe(1);
      expect(await count(tampered)).toBe(7);

      // A payment settled 30 days and 10 minutes ago, counted by a pass 20 minutes ago (as it was then): the window
      // moved past it since, and the next pass counts it out.
      await settled(aged, "now() - interval '30 days 10 minutes'");
      await svc.db.query(`UPDATE search_documents SET settlement_count = 1 WHERE resource_id = '${aged}'`);
      await svc.db.query('DELETE FROM search_signal_dirty');
      await svc.db.query("UPDATE search_signal_sync SET aged_at = now() - interval '20 minutes' WHERE id = 1");
      await noAudit();
      await index.refreshSignals();
      expect(await count(aged)).toBe(0);
      expect(await count(tampered)).toBe(7);

      // The audit's slice wraps to the first documents: the tampered signal is recomputed from its sources.
      await index.refreshSignals();
      expect(await count(tampered)).toBe(0);
      expect(await count(paid)).toBe(1);
    },
    90_000,
  );
});

describe('a reused word lookup (issue 31)', () => {
  const find = async (q: string) => {
    const res = await request(svc.app).get('/v1/discovery/search').query({ q });
    expect(res.status).toBe(200);
    return (res.body.resources as Array<{ id: string }>).map((r) => r.id);
  };
  /** Catalogs a listing (the fixture's other fields mention weather, never "sync") and waits until it is indexed. */
  const listIndexed = async (name: string, path: string): Promise<string> => {
    const res = await catalog(svc.app, seller.apiKey, {
      sellerId: seller.id,
      resource: draft(seller, { name, description: LONG, url: `https://${seller.domain}${path}`, routeTemplate: path }),
    });
    expect(res.status).toBe(201);
    await waitIndexed(svc.db);
    return res.body.resourceId as string;
  };

  it('a completion indexed after a query was looked up is found by the same query at once', async () => {
    // "sync" is known (the names above; not in the new listing); "wombat" (the last word, a prefix) matches nothing
    // yet. Asked twice: the lookup is reused.
    await find('sync wombat');
    await find('sync wombat');
    const id = await listIndexed('Wombatology feed', '/v1/marsupials/{city}');
    expect(await find('sync wombat')).toContain(id);
  });

  it('a misspelt word looked up before its right spelling was indexed finds the new listing at once', async () => {
    // "quokkka" has no near word yet: the lookup fixes nothing and is reused on the second ask. A listing named
    // "Quokka" then adds the word the typo fix needs; the reused lookup is stale (its generation is older), so the
    // search looks the words up again and the fix finds the listing. Answered from the stale lookup, it would not be
    // found: the page holds only the "Sync weather" listings. (The word is not the last one, so no prefix expansion
    // helps.)
    expect((await find('quokkka sync ')).length).toBeGreaterThan(0);
    await find('quokkka sync ');
    const id = await listIndexed('Quokka sightings', '/v1/quokkas/{city}');
    expect(await find('quokkka sync ')).toContain(id);
  });
});

describe('SEARCH_SYNC_INTERVAL_SECONDS', () => {
  it("sets the search-sync worker's period: 30 s by default, 1 to 3600 s", () => {
    const local = { LOCAL_NETWORK: 'true' };
    expect(loadConfig(local).discovery.searchSyncEvery).toBe('30 seconds');
    expect(loadConfig({ ...local, SEARCH_SYNC_INTERVAL_SECONDS: '5' }).discovery.searchSyncEvery).toBe('5 seconds');
    for (const bad of ['0', '3601', '1.5'])
      expect(() => loadConfig({ ...local, SEARCH_SYNC_INTERVAL_SECONDS: bad })).toThrow(
        /SEARCH_SYNC_INTERVAL_SECONDS must be an integer from 1 to 3600/,
      );
  });
});
