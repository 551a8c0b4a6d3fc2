/**
 * Seeding straight into the bench's own database: sellers with an API key (no sign-up round trip, so it stays fast
 * and does not depend on how sign-up proves wallet ownership). Keys are stored the way the service stores them
 * (SHA-256 digest, server/src/domain/auth/principal.ts).
 */
import { newApiKey } from '../../server/src/domain/auth/principal';
import { newId } from '../../server/src/domain/ids';
import type { BenchDatabase } from './processes';

export interface SeededSeller {
  sellerId: string;
  apiKey: string;
  walletAddress: string;
  domain: string;
}

export async function seedSeller(
  db: BenchDatabase,
  opts: { walletAddress: string; domain: string; displayName?: string; domainVerified?: boolean },
): Promise<SeededSeller> {
  const sellerId = newId('seller');
  const { key, hash } = newApiKey();
  await db.query(
    `INSERT INTO sellers (id, display_name, wallet_address, domain, domain_verified_at) VALUES ($1, $2, $3, $4, ` +
      `CASE WHEN $5 THEN now() END)`,
    [sellerId, opts.displayName ?? 'Bench seller', opts.walletAddress, opts.domain, opts.domainVerified ?? false],
  );
  await db.query(`INSERT INTO api_keys (id, seller_id, role, key_hash) VALUES ($1, $2, 'seller', $3)`, [
    newId('apiKey'),
    sellerId,
    hash,
  ]);
  return { sellerId, apiKey: key, walletAddress: opts.walletAddress, domain: opts.domain };
}
