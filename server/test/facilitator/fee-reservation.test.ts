import type { Sequelize } from 'sequelize';
import { createSequelize } from '../../src/data/database';
import { createSettlementRepository } from '../../src/data/settlement-repository';
import type { FeeBudgets, FeeParties } from '../../src/domain/facilitator/types';
import { createTestDatabase } from '../support/database';

/**
 * The fee reservation is one statement since issue #31 (a transaction of six round trips held the seller's row and
 * the one global row between its round trips, and every settle queued behind them). These pin what it must still
 * guarantee against the real PostgreSQL: all or nothing across the seller, payer, client and global rows, the party
 * that refused named, and a budget never overspent by settles arriving at once. The global figure is the sum of the
 * day's shard rows (`global_fee_shards`, migration 0135): `global:*` below.
 */
describe('fee reservation: one statement, all or nothing (issue #31)', () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Sequelize;
  let repo: ReturnType<typeof createSettlementRepository>;
  const network = 'stellar:testnet';
  const unlimited: FeeBudgets = { seller: null, payer: null, client: null, global: null };

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createSequelize(database.url, { poolMax: 10 });
    repo = createSettlementRepository(db);
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });
  beforeEach(async () => {
    await db.query('DELETE FROM seller_fee_days');
    await db.query('DELETE FROM party_fee_days');
    await db.query('DELETE FROM global_fee_shards');
  });

  async function rows(): Promise<Record<string, { committed: number; settlements: number }>> {
    const [all] = (await db.query(
      `SELECT 'seller:' || seller_id AS k, committed_stroops::int AS committed, settlements FROM seller_fee_days
       UNION ALL SELECT scope || ':' || party, committed_stroops::int, settlements FROM party_fee_days
       UNION ALL SELECT 'global:*', sum(committed_stroops)::int, sum(settlements)::int FROM global_fee_shards
         HAVING count(*) > 0`,
    )) as [Array<{ k: string; committed: number; settlements: number }>, unknown];
    return Object.fromEntries(all.map((r) => [r.k, { committed: r.committed, settlements: r.settlements }]));
  }

  const parties = (payer: string, client: string | null = 'ip:127.0.0.9'): FeeParties => ({
    sellerId: 'seller_a',
    payer,
    client,
  });

  it('a reservation commits the fee on the seller, payer, client and global rows; a release undoes it', async () => {
    const out = await repo.reserveFees(parties('GPAYER1'), network, 1000n, unlimited);
    expect(out).toEqual({ exhausted: null, globalUsed: 1000n });
    expect(await rows()).toEqual({
      'seller:seller_a': { committed: 1000, settlements: 1 },
      'payer:GPAYER1': { committed: 1000, settlements: 1 },
      'client:ip:127.0.0.9': { committed: 1000, settlements: 1 },
      'global:*': { committed: 1000, settlements: 1 },
    });
    await repo.releaseFees(parties('GPAYER1'), network, 1000n);
    expect(Object.values(await rows()).every((r) => r.committed === 0 && r.settlements === 0)).toBe(true);
  });

  it('a caller without a client address commits no client row', async () => {
    await repo.reserveFees(parties('GPAYER2', null), network, 700n, unlimited);
    expect(Object.keys(await rows()).sort()).toEqual(['global:*', 'payer:GPAYER2', 'seller:seller_a']);
  });

  it('when the payer budget would be exceeded, no row moves and the payer is named', async () => {
    const budgets: FeeBudgets = { ...unlimited, payer: 1500n };
    expect((await repo.reserveFees(parties('GPAYER3'), network, 1000n, budgets)).exhausted).toBeNull();
    const before = await rows();
    const out = await repo.reserveFees(parties('GPAYER3'), network, 1000n, budgets);
    expect(out).toEqual({ exhausted: 'payer', globalUsed: null });
    expect(await rows()).toEqual(before);
    // Another payer of the same seller and client still reserves.
    expect((await repo.reserveFees(parties('GPAYER4'), network, 1000n, budgets)).exhausted).toBeNull();
  });

  it('when the seller budget would be exceeded, it is named first and no party row is created', async () => {
    const out = await repo.reserveFees(parties('GPAYER5'), network, 1000n, { ...unlimited, seller: 999n, payer: 1n });
    expect(out).toEqual({ exhausted: 'seller', globalUsed: null });
    expect(await rows()).toEqual({});
  });

  it('twenty settles reserving at once against a global budget with room for five admit exactly five', async () => {
    const budgets: FeeBudgets = { ...unlimited, global: 5000n };
    const outs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        repo.reserveFees(
          { sellerId: `seller_${i % 3}`, payer: `GBURST${i}`, client: `ip:10.0.0.${i % 4}` },
          network,
          1000n,
          budgets,
        ),
      ),
    );
    expect(outs.filter((o) => o.exhausted === null)).toHaveLength(5);
    expect(outs.filter((o) => o.exhausted === 'global')).toHaveLength(15);
    const after = await rows();
    expect(after['global:*']).toEqual({ committed: 5000, settlements: 5 });
    const sellers = Object.entries(after).filter(([k]) => k.startsWith('seller:'));
    expect(sellers.reduce((a, [, r]) => a + r.committed, 0)).toBe(5000);
    const payers = Object.entries(after).filter(([k]) => k.startsWith('payer:'));
    expect(payers.reduce((a, [, r]) => a + r.committed, 0)).toBe(5000);
  });

  const SELLER_BURST =
    "attack: twenty strangers' first-of-the-day settles against one seller never pass its fee budget";
  it(SELLER_BURST, async () => {
    const budgets: FeeBudgets = { ...unlimited, seller: 3000n };
    const outs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        repo.reserveFees(
          { sellerId: 'seller_target', payer: `GSTRANGER${i}`, client: `ip:10.1.0.${i}` },
          network,
          1000n,
          budgets,
        ),
      ),
    );
    expect(outs.filter((o) => o.exhausted === null)).toHaveLength(3);
    expect(outs.filter((o) => o.exhausted === 'seller')).toHaveLength(17);
    const after = await rows();
    expect(after['seller:seller_target']).toEqual({ committed: 3000, settlements: 3 });
  });

  const PAYER_BURST =
    'attack: one payer bursting settles across many sellers stops at its budget; none pays for the refused';
  it(PAYER_BURST, async () => {
    const budgets: FeeBudgets = { ...unlimited, payer: 2000n };
    const outs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        repo.reserveFees(
          { sellerId: `seller_victim_${i}`, payer: 'GONEPAYER', client: 'ip:10.2.0.1' },
          network,
          1000n,
          budgets,
        ),
      ),
    );
    expect(outs.filter((o) => o.exhausted === null)).toHaveLength(2);
    expect(outs.filter((o) => o.exhausted === 'payer')).toHaveLength(10);
    const after = await rows();
    expect(after['payer:GONEPAYER']).toEqual({ committed: 2000, settlements: 2 });
    const victims = Object.entries(after).filter(([k]) => k.startsWith('seller:seller_victim_'));
    expect(victims.reduce((a, [, r]) => a + r.committed, 0)).toBe(2000);
  });

  async function shards(): Promise<{ used: number; quotas: number; caps: string[]; n: number }> {
    const [[r]] = (await db.query(
      `SELECT sum(committed_stroops + spent_stroops)::int AS used, sum(quota_stroops)::int AS quotas,
              array_agg(DISTINCT COALESCE(cap_stroops::text, 'none')) AS caps, count(*)::int AS n
         FROM global_fee_shards`,
    )) as [Array<{ used: number; quotas: number; caps: string[]; n: number }>, unknown];
    return r;
  }

  it('a global budget split across shards never passes its cap when many settles reserve at once', async () => {
    // Room for 150 fees of 1000 split over 16 shards (9,375 each), 240 settles in six waves of 40 at once: most fit
    // in their payer's shard alone, a shard that fills up takes the exact path over every shard and splits the room
    // left again, and the next waves reserve against those quotas. The total stops exactly at the cap.
    const budgets: FeeBudgets = { ...unlimited, global: 150_000n };
    const outs: Array<{ exhausted: string | null }> = [];
    const settleOf = (i: number): FeeParties => ({
      sellerId: `seller_${i % 7}`,
      payer: `GSHARD${i}`,
      client: `ip:10.3.${i % 9}.1`,
    });
    for (let wave = 0; wave < 6; wave++) {
      const ids = Array.from({ length: 40 }, (_, j) => wave * 40 + j);
      outs.push(...(await Promise.all(ids.map((i) => repo.reserveFees(settleOf(i), network, 1000n, budgets)))));
    }
    expect(outs.filter((o) => o.exhausted === null)).toHaveLength(150);
    expect(outs.filter((o) => o.exhausted === 'global')).toHaveLength(90);
    const after = await shards();
    expect(after).toMatchObject({ used: 150_000, n: 16, caps: ['150000'] });
    expect(after.quotas).toBeLessThanOrEqual(150_000);
    // Every admitted fee reached its seller and payer rows too; none of the refused did.
    const all = await rows();
    const sum = (prefix: string) =>
      Object.entries(all)
        .filter(([k]) => k.startsWith(prefix))
        .reduce((a, [, r]) => a + r.committed, 0);
    expect([sum('seller:'), sum('payer:'), sum('global:')]).toEqual([150_000, 150_000, 150_000]);
  });

  it('the global budget counts every shard: a cap lowered during the day holds from the next reservation', async () => {
    const wide: FeeBudgets = { ...unlimited, global: 1_000_000n };
    for (let i = 0; i < 6; i++)
      expect((await repo.reserveFees(parties(`GLOWER${i}`), network, 1000n, wide)).exhausted).toBeNull();
    const narrow: FeeBudgets = { ...unlimited, global: 6500n };
    expect(await repo.exhaustedFeeBudget(parties('GLOWER9'), network, narrow)).toBeNull();
    expect((await repo.reserveFees(parties('GLOWER9'), network, 1000n, narrow)).exhausted).toBe('global');
    expect(await repo.exhaustedFeeBudget(parties('GLOWER9'), network, { ...unlimited, global: 6000n })).toBe('global');
    expect((await shards()).used).toBe(6000);
    // A release gives the fee back to its payer's shard; the room is there again for the next one.
    await repo.releaseFees(parties('GLOWER0'), network, 1000n);
    expect((await repo.reserveFees(parties('GLOWER9'), network, 1000n, narrow)).exhausted).toBeNull();
    expect((await shards()).used).toBe(6000);
  });
});
