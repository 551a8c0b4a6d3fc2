import { Op, type Sequelize } from 'sequelize';
import { ApiKeyModel, DomainChallengeModel, SellerModel } from './models';
import type { Seller, SellerRepository, ApiKeyRecord, DomainChallenge } from '../domain/sellers/types';

function toSeller(row: Record<string, unknown>): Seller {
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
    async createWithKey(seller, key) {
      try {
        await db.transaction(async (transaction) => {
          await SellerModel.create({ ...seller }, { transaction });
          await ApiKeyModel.create({ ...key, revokedAt: null }, { transaction });
        });
        return 'created';
      } catch (err) {
        if ((err as { name?: string }).name === 'SequelizeUniqueConstraintError') return 'wallet_taken';
        throw err;
      }
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
