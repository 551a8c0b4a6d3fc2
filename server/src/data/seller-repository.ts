import { Op, QueryTypes, type Sequelize } from 'sequelize';
import { ApiKeyModel, DomainChallengeModel, SellerModel } from './models';
import type { Seller, SellerRepository, ApiKeyRecord, DomainChallenge, WalletChallenge } from '../domain/sellers/types';

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
          await ApiKeyModel.create({ ...key, revokedAt: null }, { transaction });
          return 'created' as const;
        });
      } catch (err) {
        if ((err as { name?: string }).name === 'SequelizeUniqueConstraintError') return 'wallet_taken';
        throw err;
      }
    },
    async createWalletChallenge(challenge) {
      await db.query(`DELETE FROM seller_wallet_challenges WHERE expires_at < now() - interval '1 hour'`);
      await db.query(
        `INSERT INTO seller_wallet_challenges (id, wallet_address, message, expires_at) VALUES (:id, :wallet, :message, :expiresAt)`,
        { replacements: { id: challenge.id, wallet: challenge.walletAddress, message: challenge.message, expiresAt: challenge.expiresAt } },
      );
    },
    async findWalletChallenge(id) {
      const [row] = await db.query<{ id: string; wallet_address: string; message: string; expires_at: Date; used_at: Date | null }>(
        'SELECT id, wallet_address, message, expires_at, used_at FROM seller_wallet_challenges WHERE id = :id',
        { replacements: { id }, type: QueryTypes.SELECT },
      );
      return row ? ({ id: row.id, walletAddress: row.wallet_address, message: row.message, expiresAt: new Date(row.expires_at), usedAt: row.used_at ? new Date(row.used_at) : null } satisfies WalletChallenge) : null;
    },
    async findById(id) {
      const row = await SellerModel.findByPk(id, { raw: true });
      return row ? toSeller(row as unknown as Record<string, unknown>) : null;
    },
    async findApiKeyByHash(hash) {
      const row = (await ApiKeyModel.findOne({ where: { keyHash: hash, revokedAt: null }, raw: true })) as unknown as ApiKeyRecord | null;
      return row ? { id: row.id, sellerId: row.sellerId, role: row.role } : null;
    },
    async domainVerifiedByOther(domain, sellerId) {
      const count = await SellerModel.count({ where: { domain, id: { [Op.ne]: sellerId }, domainVerifiedAt: { [Op.ne]: null } } });
      return count > 0;
    },
    async latestChallenge(sellerId) {
      const row = await DomainChallengeModel.findOne({
        where: { sellerId, expiresAt: { [Op.gt]: new Date() } },
        order: [['createdAt', 'DESC'], ['id', 'DESC']],
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
          { status: result.status, checkedMethod: result.method, failureReason: result.failureReason, checkedAt: result.checkedAt },
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
