import { DomainError, notFound } from '../errors';
import { newId } from '../ids';
import { newApiKey, assertActsFor, type Principal } from '../auth/principal';
import { isAccountAddress } from '../network-registry';
import type { Seller, SellerRepository, VerificationStatus, DomainChallenge } from './types';
import {
  CHALLENGE_TTL_MS as WALLET_CHALLENGE_TTL_MS,
  challengeMessage,
  newChallengeId,
  verifyWalletSignature,
} from './wallet-proof';
import {
  challengeInstructions,
  checkDomain,
  isValidSellerDomain,
  LOCAL_DOMAIN_HINT,
  newChallengeToken,
  type DomainCheckPorts,
  type DomainVerificationMethod,
} from './domain-verification';

export interface SellerView extends Seller {
  verificationStatus: VerificationStatus;
}

export interface DomainVerificationView {
  sellerId: string;
  domain: string;
  status: 'pending' | 'verified' | 'failed';
  token: string;
  methods: ReturnType<typeof challengeInstructions>;
  checkedMethod: DomainVerificationMethod | null;
  failureReason: string | null;
  domainVerifiedAt: Date | null;
  expiresAt: Date;
}

export interface SellerServiceDeps {
  sellers: SellerRepository;
  domainCheck: DomainCheckPorts;
  /** Where checks fetch from; tests point it at a local server. Default https://<domain>. */
  domainUrlBase?: (domain: string) => string;
  onDomainVerificationFailure?: (reason: string) => void;
}

const CHALLENGE_TTL_MS = 7 * 24 * 3600 * 1000;

export function createSellerService(deps: SellerServiceDeps) {
  const { sellers } = deps;

  async function view(seller: Seller): Promise<SellerView> {
    let verificationStatus: VerificationStatus = 'unverified';
    if (seller.domainVerifiedAt) verificationStatus = 'verified';
    else if (await sellers.latestChallenge(seller.id)) verificationStatus = 'pending';
    return { ...seller, verificationStatus };
  }

  async function load(sellerId: string): Promise<Seller> {
    const seller = await sellers.findById(sellerId);
    if (!seller) throw notFound('seller', sellerId);
    return seller;
  }

  function challengeView(seller: Seller, challenge: DomainChallenge): DomainVerificationView {
    return {
      sellerId: seller.id,
      domain: seller.domain,
      status: challenge.status,
      token: challenge.token,
      methods: challengeInstructions(seller.domain, seller.walletAddress, challenge.token),
      checkedMethod: (challenge.checkedMethod as DomainVerificationMethod | null) ?? null,
      failureReason: challenge.failureReason,
      domainVerifiedAt: seller.domainVerifiedAt,
      expiresAt: challenge.expiresAt,
    };
  }

  return {
    /** Issues a short-lived, single-use challenge that the wallet signs to prove it is the caller's (SEP-10 style). */
    async createWalletChallenge(
      walletAddress: string,
    ): Promise<{ challengeId: string; walletAddress: string; message: string; expiresAt: Date }> {
      if (!isAccountAddress(walletAddress)) {
        throw new DomainError('INVALID_REQUEST', 'The wallet address is not valid', [
          { field: 'walletAddress', message: 'must be a valid Stellar account address (G...)' },
        ]);
      }
      const id = newChallengeId();
      // Whole seconds, so the message's ISO time and the stored timestamp are the same instant.
      const expiresAt = new Date(Math.ceil((Date.now() + WALLET_CHALLENGE_TTL_MS) / 1000) * 1000);
      const message = challengeMessage(walletAddress, id, expiresAt);
      await sellers.createWalletChallenge({ id, walletAddress, message, expiresAt });
      return { challengeId: id, walletAddress, message, expiresAt };
    },

    /**
     * Creates a seller and its API key (an admin key named "initial"); the key is returned here once and stored only as
     * a hash. The caller proves
     * it controls the wallet with the wallet's signature of a challenge issued for it (consumed here, once).
     */
    async create(input: {
      displayName: string;
      walletAddress: string;
      domain: string;
      walletProof: { challengeId: string; signature: string };
    }): Promise<{ seller: SellerView; apiKey: string }> {
      const domain = input.domain.toLowerCase();
      const details = [];
      if (!isAccountAddress(input.walletAddress))
        details.push({ field: 'walletAddress', message: 'must be a valid Stellar account address (G...)' });
      if (!isValidSellerDomain(domain))
        details.push({
          field: 'domain',
          message: `must be a public DNS hostname such as api.example.com; ${LOCAL_DOMAIN_HINT}`,
        });
      if (!input.displayName.trim()) details.push({ field: 'displayName', message: 'must not be blank' });
      if (
        !input.walletProof ||
        typeof input.walletProof.challengeId !== 'string' ||
        typeof input.walletProof.signature !== 'string'
      ) {
        details.push({
          field: 'walletProof',
          message: 'is required: sign a challenge from POST /v1/sellers/challenges with the wallet',
        });
      }
      if (details.length) throw new DomainError('INVALID_REQUEST', 'The seller is not valid', details);
      const challenge = await sellers.findWalletChallenge(input.walletProof.challengeId);
      if (!challenge || challenge.expiresAt.getTime() <= Date.now()) {
        throw new DomainError('AUTH_EXPIRED', 'The sign-up challenge is unknown or expired; ask for a new one', [
          { field: 'walletProof.challengeId', message: 'unknown or expired' },
        ]);
      }
      if (
        challenge.walletAddress !== input.walletAddress ||
        !verifyWalletSignature(input.walletAddress, challenge.message, input.walletProof.signature)
      ) {
        throw new DomainError(
          'INVALID_SIGNATURE',
          `The wallet proof is not a signature of the challenge by ${input.walletAddress}`,
          [{ field: 'walletProof.signature', message: 'does not verify for walletAddress' }],
        );
      }
      if (challenge.usedAt)
        throw new DomainError('REPLAY_DETECTED', 'This sign-up challenge was already used; ask for a new one', [
          { field: 'walletProof.challengeId', message: 'already used' },
        ]);
      const now = new Date();
      const seller = {
        id: newId('seller'),
        displayName: input.displayName.trim(),
        walletAddress: input.walletAddress,
        domain,
        domainVerifiedAt: null,
        createdAt: now,
        updatedAt: now,
      };
      const key = newApiKey();
      const initialKey = {
        id: newId('apiKey'),
        sellerId: seller.id,
        role: 'seller' as const,
        name: 'initial',
        scope: 'admin' as const,
        prefix: key.prefix,
        keyHash: key.hash,
        createdAt: now,
        expiresAt: null,
      };
      const outcome = await sellers.createWithKey(seller, initialKey, challenge.id);
      if (outcome === 'wallet_taken')
        throw new DomainError('CONFLICT', 'A seller with this wallet address already exists', [
          { field: 'walletAddress', message: 'already registered' },
        ]);
      if (outcome === 'challenge_used')
        throw new DomainError('REPLAY_DETECTED', 'This sign-up challenge was already used; ask for a new one', [
          { field: 'walletProof.challengeId', message: 'already used' },
        ]);
      return { seller: { ...seller, verificationStatus: 'unverified' }, apiKey: key.key };
    },

    async get(sellerId: string): Promise<SellerView> {
      return view(await load(sellerId));
    },

    /** Returns the seller when it exists (for the catalog rules), else null. */
    async find(sellerId: string): Promise<Seller | null> {
      return sellers.findById(sellerId);
    },

    /**
     * Without a method: creates a challenge (or returns the open one). With a method: checks it now and, when it
     * passes, sets domainVerifiedAt.
     */
    async verifyDomain(
      principal: Principal,
      sellerId: string,
      method: DomainVerificationMethod | undefined,
    ): Promise<DomainVerificationView> {
      const seller = await load(sellerId);
      assertActsFor(principal, sellerId);
      let challenge = await sellers.latestChallenge(sellerId);
      if (!challenge || challenge.domain !== seller.domain) {
        const now = new Date();
        challenge = {
          id: newId('challenge'),
          sellerId,
          domain: seller.domain,
          token: newChallengeToken(),
          status: 'pending',
          checkedMethod: null,
          failureReason: null,
          checkedAt: null,
          expiresAt: new Date(now.getTime() + CHALLENGE_TTL_MS),
          createdAt: now,
        };
        await sellers.createChallenge(challenge);
      }
      if (!method) return challengeView(seller, challenge);
      let result = (await sellers.domainVerifiedByOther(seller.domain, sellerId))
        ? { verified: false, reason: 'domain_claimed', message: 'another seller has already verified this domain' }
        : await checkDomain(
            method,
            { domain: seller.domain, walletAddress: seller.walletAddress, token: challenge.token },
            deps.domainCheck,
            deps.domainUrlBase ? { urlBase: deps.domainUrlBase } : undefined,
          );
      const checkedAt = new Date();
      try {
        if (result.verified)
          await sellers.recordCheck(challenge.id, sellerId, {
            status: 'verified',
            method,
            failureReason: null,
            checkedAt,
          });
      } catch (err) {
        // Another seller verified the same domain meanwhile: the database keeps one owner (sellers_verified_domain_uq).
        if ((err as { parent?: { code?: string } }).parent?.code !== '23505') throw err;
        result = {
          verified: false,
          reason: 'domain_claimed',
          message: 'another seller has already verified this domain',
        };
      }
      const status = result.verified ? 'verified' : 'failed';
      const failureReason = result.verified ? null : `${result.reason}: ${result.message}`;
      if (!result.verified)
        await sellers.recordCheck(challenge.id, sellerId, { status, method, failureReason, checkedAt });
      if (!result.verified) deps.onDomainVerificationFailure?.(result.reason ?? 'unknown');
      const updated = result.verified ? { ...seller, domainVerifiedAt: seller.domainVerifiedAt ?? checkedAt } : seller;
      return challengeView(updated, { ...challenge, status, checkedMethod: method, failureReason, checkedAt });
    },
  };
}

export type SellerService = ReturnType<typeof createSellerService>;
