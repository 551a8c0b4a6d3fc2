export interface Seller {
  id: string;
  displayName: string;
  walletAddress: string;
  domain: string;
  domainVerifiedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export type VerificationStatus = 'unverified' | 'pending' | 'verified';

/** What a seller key may do: `admin` everything of its seller's; `payments` the facilitator and payment reads. */
export type ApiKeyScope = 'admin' | 'payments';

/** What authentication needs of a key (cached per process; never the key itself). */
export interface ApiKeyRecord {
  id: string;
  sellerId: string | null;
  role: 'seller' | 'operator';
  scope: ApiKeyScope;
  expiresAt: Date | null;
}

/** A seller key as its owner sees it (GET /v1/sellers/{sellerId}/keys). */
export interface ApiKeyInfo {
  id: string;
  sellerId: string;
  name: string;
  scope: ApiKeyScope;
  prefix: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/** A key to store: the hash of the secret, never the secret. */
export interface NewApiKey {
  id: string;
  sellerId: string;
  role: 'seller';
  name: string;
  scope: ApiKeyScope;
  prefix: string;
  keyHash: Buffer;
  createdAt: Date;
  expiresAt: Date | null;
}

export interface DomainChallenge {
  id: string;
  sellerId: string;
  domain: string;
  token: string;
  status: 'pending' | 'verified' | 'failed';
  checkedMethod: string | null;
  failureReason: string | null;
  checkedAt: Date | null;
  expiresAt: Date;
  createdAt: Date;
}

/** A wallet sign-up challenge (POST /v1/sellers/challenges). */
export interface WalletChallenge {
  id: string;
  walletAddress: string;
  message: string;
  expiresAt: Date;
  usedAt: Date | null;
}

export interface SellerRepository {
  /**
   * Creates the seller and its key, consuming the wallet challenge in the same transaction (compare-and-set on an
   * unused, unexpired challenge of that wallet): 'challenge_used' when it was already consumed or expired meanwhile.
   */
  createWithKey(
    seller: Omit<Seller, 'domainVerifiedAt'> & { domainVerifiedAt: null },
    key: NewApiKey,
    challengeId: string,
  ): Promise<'created' | 'wallet_taken' | 'challenge_used'>;
  /**
   * Stores another key of the seller unless it already has `maxActive` keys that are neither revoked nor expired
   * (counted under a lock of the seller's row, so concurrent creations across processes keep the bound).
   */
  createApiKey(key: NewApiKey, maxActive: number): Promise<'created' | 'too_many' | 'no_seller'>;
  /** The seller's keys, newest first, at most `limit`. */
  listApiKeys(sellerId: string, limit: number): Promise<ApiKeyInfo[]>;
  /**
   * Revokes the key (keeping the first revocation time) and notifies every server process (pg_notify on
   * API_KEY_CHANNEL, delivered at commit); null when the seller has no such key.
   */
  revokeApiKey(sellerId: string, keyId: string): Promise<ApiKeyInfo | null>;
  /** Records that the key was used now, unless that was already recorded within the last minute. */
  touchApiKey(keyId: string): Promise<void>;
  /** Stores a new challenge (expired ones are deleted by the retention worker). */
  createWalletChallenge(challenge: Omit<WalletChallenge, 'usedAt'>): Promise<void>;
  findWalletChallenge(id: string): Promise<WalletChallenge | null>;
  findById(id: string): Promise<Seller | null>;
  /** The signed-up seller whose wallet is `address`, else null. */
  sellerIdByWallet(address: string): Promise<string | null>;
  findApiKeyByHash(hash: Buffer): Promise<ApiKeyRecord | null>;
  /** Whether a seller other than `sellerId` has already verified `domain`. */
  domainVerifiedByOther(domain: string, sellerId: string): Promise<boolean>;
  latestChallenge(sellerId: string): Promise<DomainChallenge | null>;
  createChallenge(challenge: DomainChallenge): Promise<void>;
  recordCheck(
    challengeId: string,
    sellerId: string,
    result: { status: 'verified' | 'failed'; method: string; failureReason: string | null; checkedAt: Date },
  ): Promise<void>;
}
