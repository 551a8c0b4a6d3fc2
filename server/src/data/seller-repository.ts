import { Op, QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import { DomainChallengeModel, SellerModel } from './models';
import type {
  Seller,
  SellerRepository,
  DomainChallenge,
  WalletChallenge,
  ApiKeyInfo,
  ApiKeyScope,
  NewApiKey,
} from '../domain/sellers/types';

/** The PostgreSQL notification channel of key changes (payload: the key id); authenticate.ts's cache listens. */
export const API_KEY_CHANNEL = 'api_key_changes';

const KEY_COLUMNS = 'id, seller_id, name, scope, prefix, created_at, expires_at, last_used_at, revoked_at';
interface KeyRow {
  id: string;
  seller_id: string;
  name: string;
  scope: ApiKeyScope;
  prefix: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}
const date = (v: Date | string | null): Date | null => (v === null ? null : new Date(v));
function toKeyInfo(r: KeyRow): ApiKeyInfo {
  return {
    id: r.id,
    sellerId: r.seller_id,
    name: r.name,
    scope: r.scope,
    prefix: r.prefix,
    createdAt: new Date(r.created_at),
    expiresAt: date(r.expires_at),
    lastUsedAt: date(r.last_used_at),
    revokedAt: date(r.revoked_at),
  };
}

async function insertKey(db: Sequelize, key: NewApiKey, transaction: Transaction): Promise<void> {
  await db.query(
    `INSERT INTO api_keys (id, seller_id, role, key_hash, created_at, name, scope, prefix, expires_at)
       VALUES (:id, :sellerId, 'seller', :keyHash, :createdAt, :name, :scope, :prefix, :expiresAt)`,
    { replacements: { ...key }, transaction },
  );
}

/** A seller row (camelCase columns) as the domain's Seller. */
export function toSeller(row: Record<string, unknown>): Seller {
  return {
    id: row.id as string,
    displayName: row.displayName as string,
    walletAddress: row.walletAddress as string,
    domain: row.domain as string,
    domainVerifiedAt: (row.domainVerifiedAt as Date | null) ?? null,
    createdAt: row.createdAt as Date,
    updatedAt: row.updatedAt as Date,
  };
}

export function createSellerRepository(db: Sequelize): SellerRepository {
  return {
    async createWithKey(seller, key, challengeId) {
      try {
        return await db.transaction(async (transaction) => {
          const consumed = await db.query(
            `UPDATE seller_wallet_challenges SET used_at = now()
              WHERE id = :id AND wallet_address = :wallet AND used_at IS NULL AND expires_at > now() RETURNING id`,
            { replacements: { id: challengeId, wallet: seller.walletAddress }, type: QueryTypes.SELECT, transaction },
          );
          if (consumed.length !== 1) return 'challenge_used' as const;
          await SellerModel.create({ ...seller }, { transaction });
          await insertKey(db, key, transaction);
          return 'created' as const;
        });
      } catch (err) {
        if ((err as { name?: string }).name === 'SequelizeUniqueConstraintError') return 'wallet_taken';
        throw err;
      }
    },
    async createWalletChallenge(challenge) {
      await db.query(
        `INSERT INTO seller_wallet_challenges (id, wallet_address, message, expires_at) VALUES (:id, :wallet, ` +
          `:message, :expiresAt)`,
        {
          replacements: {
            id: challenge.id,
            wallet: challenge.walletAddress,
            message: challenge.message,
            expiresAt: challenge.expiresAt,
          },
        },
      );
    },
    async findWalletChallenge(id) {
      const [row] = await db.query<{
        id: string;
        wallet_address: string;
        message: string;
        expires_at: Date;
        used_at: Date | null;
      }>('SELECT id, wallet_address, message, expires_at, used_at FROM seller_wallet_challenges WHERE id = :id', {
        replacements: { id },
        type: QueryTypes.SELECT,
      });
      return row
        ? ({
            id: row.id,
            walletAddress: row.wallet_address,
            message: row.message,
            expiresAt: new Date(row.expires_at),
            usedAt: row.used_at ? new Date(row.used_at) : null,
          } satisfies WalletChallenge)
        : null;
    },
    async findById(id) {
      const row = await SellerModel.findByPk(id, { raw: true });
      return row ? toSeller(row as unknown as Record<string, unknown>) : null;
    },
    async sellerIdByWallet(address) {
      const row = (await SellerModel.findOne({ where: { walletAddress: address }, attributes: ['id'], raw: true })) as {
        id: string;
      } | null;
      return row?.id ?? null;
    },
    async findApiKeyByHash(hash) {
      const [row] = await db.query<{
        id: string;
        seller_id: string | null;
        role: 'seller' | 'operator';
        scope: ApiKeyScope;
        expires_at: Date | null;
      }>('SELECT id, seller_id, role, scope, expires_at FROM api_keys WHERE key_hash = :hash AND revoked_at IS NULL', {
        replacements: { hash },
        type: QueryTypes.SELECT,
      });
      return row
        ? { id: row.id, sellerId: row.seller_id, role: row.role, scope: row.scope, expiresAt: date(row.expires_at) }
        : null;
    },
    async createApiKey(key, maxActive) {
      return db.transaction(async (transaction) => {
        const seller = await db.query('SELECT id FROM sellers WHERE id = :id FOR UPDATE', {
          replacements: { id: key.sellerId },
          type: QueryTypes.SELECT,
          transaction,
        });
        if (seller.length === 0) return 'no_seller' as const;
        const [{ n }] = await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM api_keys
            WHERE seller_id = :id AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
          { replacements: { id: key.sellerId }, type: QueryTypes.SELECT, transaction },
        );
        if (n >= maxActive) return 'too_many' as const;
        await insertKey(db, key, transaction);
        return 'created' as const;
      });
    },
    async listApiKeys(sellerId, limit) {
      const rows = await db.query<KeyRow>(
        `SELECT ${KEY_COLUMNS} FROM api_keys WHERE seller_id = :sellerId ORDER BY created_at DESC, id DESC ` +
          `LIMIT :limit`,
        {
          replacements: { sellerId, limit },
          type: QueryTypes.SELECT,
        },
      );
      return rows.map(toKeyInfo);
    },
    async revokeApiKey(sellerId, keyId) {
      // One statement: the notification is sent when it commits, so no process hears of a revocation that did not
      // happen.
      const [row] = await db.query<KeyRow>(
        `WITH revoked AS (
           UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = :keyId AND seller_id
             = :sellerId RETURNING ${KEY_COLUMNS}
         )
         SELECT revoked.*, pg_notify(:channel, revoked.id) FROM revoked`,
        { replacements: { sellerId, keyId, channel: API_KEY_CHANNEL }, type: QueryTypes.SELECT },
      );
      return row ? toKeyInfo(row) : null;
    },
    async touchApiKey(keyId) {
      await db.query(
        `UPDATE api_keys SET last_used_at = now() WHERE id = :keyId AND (last_used_at IS NULL OR last_used_at < ` +
          `now() - interval '1 minute')`,
        {
          replacements: { keyId },
        },
      );
    },
    async domainVerifiedByOther(domain, sellerId) {
      const count = await SellerModel.count({
        where: { domain, id: { [Op.ne]: sellerId }, domainVerifiedAt: { [Op.ne]: null } },
      });
      return count > 0;
    },
    async latestChallenge(sellerId) {
      const row = await DomainChallengeModel.findOne({
        where: { sellerId, expiresAt: { [Op.gt]: new Date() } },
        order: [
          ['createdAt', 'DESC'],
          ['id', 'DESC'],
        ],
        raw: true,
      });
      return (row as unknown as DomainChallenge | null) ?? null;
    },
    async createChallenge(challenge) {
      await DomainChallengeModel.create({ ...challenge });
    },
    async recordCheck(challengeId, sellerId, result) {
      await db.transaction(async (transaction) => {
        await DomainChallengeModel.update(
          {
            status: result.status,
            checkedMethod: result.method,
            failureReason: result.failureReason,
            checkedAt: result.checkedAt,
          },
          { where: { id: challengeId }, transaction },
        );
        if (result.status === 'verified') {
          await SellerModel.update(
            { domainVerifiedAt: result.checkedAt, updatedAt: result.checkedAt },
            { where: { id: sellerId, domainVerifiedAt: null }, transaction },
          );
        }
      });
    },
  };
}
