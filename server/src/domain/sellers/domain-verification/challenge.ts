import crypto from 'node:crypto';
import { DomainCheckError } from './errors';
import { isValidSellerDomain } from './seller-domain';

export type DomainVerificationMethod = 'stellar_toml' | 'dns_txt' | 'https_well_known';

export const DOMAIN_VERIFICATION_METHODS: readonly DomainVerificationMethod[] = Object.freeze([
  'stellar_toml',
  'dns_txt',
  'https_well_known',
] as const);

export const STELLAR_TOML_PATH = '/.well-known/stellar.toml';
export const WELL_KNOWN_PATH = '/.well-known/marketplace-verification.txt';
export const STELLAR_TOML_TOKEN_KEY = 'MARKETPLACE_VERIFICATION';
export const DNS_TXT_PREFIX = '_marketplace-verification.';
export const DNS_TXT_VALUE_PREFIX = 'marketplace-verification=';

const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
const STELLAR_ACCOUNT = /^G[A-Z2-7]{55}$/;

/** 24 random bytes, base64url: 32 characters, safe in URLs, TOML strings and TXT records. */
export function newChallengeToken(): string {
  return crypto.randomBytes(24).toString('base64url');
}

export function isValidChallengeToken(token: string): boolean {
  return typeof token === 'string' && TOKEN.test(token);
}

/** Shape check only (G + 55 base32 chars); the checksum is not verified here. */
export function isStellarAccountId(walletAddress: string): boolean {
  return typeof walletAddress === 'string' && STELLAR_ACCOUNT.test(walletAddress);
}

export function dnsTxtName(domain: string): string {
  return `${DNS_TXT_PREFIX}${domain}`;
}

export interface ChallengeInstructions {
  method: DomainVerificationMethod;
  /** A URL for the HTTPS methods, a DNS name for dns_txt. */
  location: string;
  instructions: string;
  expectedValue: string;
}

/** What the seller must publish for each method. Throws DomainCheckError on a bad domain, wallet or token. */
export function challengeInstructions(domain: string, walletAddress: string, token: string): ChallengeInstructions[] {
  if (!isValidSellerDomain(domain))
    throw new DomainCheckError('invalid_domain', 'The seller domain is not a valid hostname');
  if (!isStellarAccountId(walletAddress))
    throw new DomainCheckError('invalid_input', 'The wallet address is not a Stellar account id (G...)');
  if (!isValidChallengeToken(token)) throw new DomainCheckError('invalid_input', 'The challenge token is malformed');
  return [
    {
      method: 'stellar_toml',
      location: `https://${domain}${STELLAR_TOML_PATH}`,
      instructions:
        `Serve a SEP-1 stellar.toml at this URL (status 200, no redirect) whose top-level ACCOUNTS array includes ` +
        `${walletAddress} and which contains the line below.`,
      expectedValue: `${STELLAR_TOML_TOKEN_KEY} = "${token}"`,
    },
    {
      method: 'dns_txt',
      location: dnsTxtName(domain),
      instructions: `Add a TXT record at this name with the value below.`,
      expectedValue: `${DNS_TXT_VALUE_PREFIX}${token}`,
    },
    {
      method: 'https_well_known',
      location: `https://${domain}${WELL_KNOWN_PATH}`,
      instructions: `Serve a text file at this URL (status 200, no redirect) containing exactly the value below.`,
      expectedValue: token,
    },
  ];
}
