import { DataTypes, Model, type Sequelize } from 'sequelize';

/**
 * Sequelize models over the tables the migrations create (the app never calls sync()). Repositories use them and
 * return plain objects; nothing outside data/ sees a model instance.
 */
const common = { underscored: true, timestamps: false } as const;
const text = (allowNull = false) => ({ type: DataTypes.TEXT, allowNull });
const time = (allowNull = false) => ({ type: DataTypes.DATE, allowNull });
const amount = () => ({ type: DataTypes.DECIMAL(20, 7), allowNull: false });

export class SellerModel extends Model {}
export class ApiKeyModel extends Model {}
export class DomainChallengeModel extends Model {}
export class ResourceModel extends Model {}
export class ResourceVersionModel extends Model {}
export class CatalogEventModel extends Model {}
export class PaymentAttemptModel extends Model {}
export class SettlementModel extends Model {}
export class ReceiptModel extends Model {}

const terms = {
  name: text(),
  description: text(),
  url: text(),
  routeTemplate: text(),
  network: text(),
  payTo: text(),
  assetCode: text(),
  assetIssuer: text(),
  amount: amount(),
  inputSchema: { type: DataTypes.JSONB, allowNull: false },
  outputSchema: { type: DataTypes.JSONB, allowNull: false },
  extensions: { type: DataTypes.JSONB, allowNull: false },
};

export function defineModels(sequelize: Sequelize): void {
  SellerModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      displayName: text(),
      walletAddress: text(),
      domain: text(),
      domainVerifiedAt: time(true),
      createdAt: time(),
      updatedAt: time(),
    },
    { ...common, sequelize, tableName: 'sellers' },
  );
  ApiKeyModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      sellerId: text(true),
      role: text(),
      keyHash: { type: DataTypes.BLOB, allowNull: false },
      createdAt: time(),
      revokedAt: time(true),
    },
    { ...common, sequelize, tableName: 'api_keys' },
  );
  DomainChallengeModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      sellerId: text(),
      domain: text(),
      token: text(),
      status: text(),
      checkedMethod: text(true),
      failureReason: text(true),
      checkedAt: time(true),
      expiresAt: time(),
      createdAt: time(),
    },
    { ...common, sequelize, tableName: 'domain_challenges' },
  );
  ResourceModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      sellerId: text(),
      currentVersionId: text(true),
      version: { type: DataTypes.INTEGER, allowNull: false },
      type: text(),
      ...terms,
      status: text(),
      deletedAt: time(true),
      createdAt: time(),
      updatedAt: time(),
    },
    { ...common, sequelize, tableName: 'resources' },
  );
  ResourceVersionModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      resourceId: text(),
      version: { type: DataTypes.INTEGER, allowNull: false },
      ...terms,
      sellerDomain: text(),
      createdAt: time(),
    },
    { ...common, sequelize, tableName: 'resource_versions' },
  );
  CatalogEventModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      resourceId: text(),
      versionId: text(true),
      sellerId: text(),
      kind: text(),
      indexedAt: time(true),
      createdAt: time(),
    },
    { ...common, sequelize, tableName: 'catalog_events' },
  );
  PaymentAttemptModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      resourceId: text(true),
      versionId: text(true),
      sellerId: text(true),
      paymentHash: text(),
      network: text(),
      payer: text(),
      nonce: text(),
      assetCode: text(),
      assetIssuer: text(),
      amount: amount(),
      payTo: text(),
      status: text(),
      failureCode: text(true),
      failureReason: text(true),
      expiresAtLedger: { type: DataTypes.INTEGER, allowNull: false },
      authorizationXdr: text(),
      createdAt: time(),
      updatedAt: time(),
    },
    { ...common, sequelize, tableName: 'payment_attempts' },
  );
  SettlementModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      paymentAttemptId: text(),
      transactionHash: text(),
      ledger: { type: DataTypes.INTEGER, allowNull: true },
      network: text(),
      amount: amount(),
      assetCode: text(),
      assetIssuer: text(),
      status: text(),
      evidence: text(),
      channelAccount: text(true),
      settledAt: time(true),
      validUntil: time(true),
      txSequence: { type: DataTypes.BIGINT, allowNull: true },
      sellerId: text(true),
      maxFeeStroops: { type: DataTypes.BIGINT, allowNull: true },
      feeChargedStroops: { type: DataTypes.BIGINT, allowNull: true },
      needsReconciliation: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
      createdAt: time(),
      updatedAt: time(),
    },
    { ...common, sequelize, tableName: 'settlements' },
  );
  ReceiptModel.init(
    {
      id: { type: DataTypes.TEXT, primaryKey: true },
      paymentAttemptId: text(),
      settlementId: text(true),
      resourceId: text(true),
      versionId: text(true),
      sellerId: text(true),
      transactionHash: text(true),
      ledger: { type: DataTypes.INTEGER, allowNull: true },
      network: text(),
      amount: amount(),
      assetCode: text(),
      assetIssuer: text(),
      status: text(),
      evidence: text(),
      failureCode: text(true),
      failureReason: text(true),
      settledAt: time(true),
      createdAt: time(),
      updatedAt: time(),
    },
    { ...common, sequelize, tableName: 'receipts' },
  );
}
