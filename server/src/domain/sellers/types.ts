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

export interface ApiKeyRecord {
  id: string;
  sellerId: string | null;
  role: 'seller' | 'operator';
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
    key: { id: string; sellerId: string; role: 'seller'; keyHash: Buffer; createdAt: Date },
    challengeId: string,
  ): Promise<'created' | 'wallet_taken' | 'challenge_used'>;
  /** Stores a new challenge and deletes expired ones. */
  createWalletChallenge(challenge: Omit<WalletChallenge, 'usedAt'>): Promise<void>;
  findWalletChallenge(id: string): Promise<WalletChallenge | null>;
  findById(id: string): Promise<Seller | null>;
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
