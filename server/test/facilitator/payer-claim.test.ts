import type { Sequelize } from 'sequelize';
import { createSequelize } from '../../src/data/database';
import { createAttemptRepository } from '../../src/data/attempt-repository';
import { createTestDatabase } from '../support/database';

/**
 * The claim of an attempt for settlement is one statement since issue #31 (a transaction of four round trips sat idle
 * in transaction on every settle's path). These pin the payer's turn it must still decide against the real PostgreSQL:
 * no other transfer of the payer in flight, none finished since this settle's simulation, including a final answer
 * being written at the very moment of the claim.
 */
describe("claim for settlement: one statement, the payer's turn (issue #31)", () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Sequelize;
  let repo: ReturnType<typeof createAttemptRepository>;
  let n = 0;

  beforeAll(async () => {
    database = await createTestDatabase();
    db = createSequelize(database.url, { poolMax: 6 });
    repo = createAttemptRepository(db);
    await db.query(
      `INSERT INTO sellers (id, display_name, wallet_address, domain) VALUES ('seller_x', 'Seller X', $1, 'x.example')`,
      { bind: ['G' + 'A'.repeat(55)] },
    );
  });
  afterAll(async () => {
    await db.close();
    await database.drop();
  });

  async function attempt(payer: string, status: string, updatedAt = 'now()'): Promise<string> {
    const id = `pa_claim_${++n}`;
    await db.query(
      `INSERT INTO payment_attempts (id, payment_hash, network, payer, nonce, asset_code, asset_issuer, amount, pay_to,
         status, expires_at_ledger, authorization_xdr, created_at, updated_at)
       VALUES ($1, $2, 'stellar:testnet', $3, $4, 'USDC', 'GISSUER', '0.01', 'GPAYTO', $5, 100, 'AAAA', now(),
         ${updatedAt})`,
      { bind: [id, `hash_${id}`, payer, `nonce_${id}`, status] },
    );
    return id;
  }
  const statusOf = async (id: string) =>
    (
      (await db.query('SELECT status FROM payment_attempts WHERE id = $1', { bind: [id], plain: true })) as {
        status: string;
      }
    ).status;
  const claim = (id: string, since: Date) => repo.claimForSettlement(id, null, 'seller_x', since);

  it('a verified attempt whose payer has nothing else in flight is claimed once; a second claim has lost', async () => {
    const id = await attempt('GPAYER_FREE', 'verified');
    expect(await claim(id, new Date())).toBe('claimed');
    expect(await statusOf(id)).toBe('settlement_pending');
    expect(await claim(id, new Date())).toBe('lost');
  });

  it("the payer's other transfer in flight makes the claim wait its turn (payer_busy), nothing written", async () => {
    await attempt('GPAYER_BUSY', 'settlement_pending');
    const id = await attempt('GPAYER_BUSY', 'verified');
    expect(await claim(id, new Date())).toBe('payer_busy');
    expect(await statusOf(id)).toBe('verified');
  });

  it("a payer's transfer finished since this settle's simulation refuses its claim; one before does not", async () => {
    const since = new Date();
    await attempt('GPAYER_DONE', 'settled', "now() - interval '1 minute'");
    const id = await attempt('GPAYER_DONE', 'verified');
    expect(await claim(id, since)).toBe('claimed');
    const since2 = new Date(Date.now() - 60_000);
    await attempt('GPAYER_DONE2', 'settlement_failed');
    const id2 = await attempt('GPAYER_DONE2', 'verified');
    expect(await claim(id2, since2)).toBe('payer_busy');
    expect(await statusOf(id2)).toBe('verified');
  });

  it("a final answer written to the payer's transfer in flight while the claim runs still refuses it", async () => {
    const inFlight = await attempt('GPAYER_RACE', 'settlement_pending');
    const id = await attempt('GPAYER_RACE', 'verified');
    const since = new Date(Date.now() - 1000);
    // The final answer's statement holds the row (an open transaction), then commits while the claim waits on it.
    const writer = await db.transaction();
    await db.query(`UPDATE payment_attempts SET status = 'settled', updated_at = now() WHERE id = $1`, {
      bind: [inFlight],
      transaction: writer,
    });
    const pending = claim(id, since);
    await new Promise((r) => setTimeout(r, 300));
    await writer.commit();
    // It finished after this settle's simulation: the payer's funds may have moved, so the claim is not this turn's.
    expect(await pending).toBe('payer_busy');
    expect(await statusOf(id)).toBe('verified');
    // The next settle (a new simulation after that answer) takes its turn.
    expect(await claim(id, new Date())).toBe('claimed');
  });
});
