import {
  DOMAIN_VERIFICATION_METHODS,
  isStellarAccountId,
  isValidChallengeToken,
  type DomainVerificationMethod,
} from './challenge';
import { checkDnsTxt } from './check-dns-txt';
import { checkStellarToml } from './check-stellar-toml';
import { checkWellKnown } from './check-well-known';
import { DomainCheckError, type DomainCheckReason } from './errors';
import type { DomainCheckInput, DomainCheckOptions, DomainCheckPorts } from './ports';
import { isValidSellerDomain } from './seller-domain';

export interface DomainCheckResult {
  verified: boolean;
  /** Failure code (see DOMAIN_CHECK_REASONS); null when verified. */
  reason: DomainCheckReason | null;
  /** Human-readable explanation, safe to show the seller; null when verified. */
  message: string | null;
}

/**
 * Runs one verification method. Never throws: every failure, including a port failing unexpectedly, comes back as
 * `{ verified: false, reason, message }`.
 */
export async function checkDomain(
  method: DomainVerificationMethod,
  input: DomainCheckInput,
  ports: DomainCheckPorts,
  opts: DomainCheckOptions = {},
): Promise<DomainCheckResult> {
  try {
    if (!isValidSellerDomain(input.domain))
      throw new DomainCheckError('invalid_domain', 'The seller domain is not a valid hostname');
    if (!isStellarAccountId(input.walletAddress))
      throw new DomainCheckError('invalid_input', 'The wallet address is not a Stellar account id (G...)');
    if (!isValidChallengeToken(input.token))
      throw new DomainCheckError('invalid_input', 'The challenge token is malformed');
    const origin = (opts.urlBase ?? ((domain: string) => `https://${domain}`))(input.domain).replace(/\/+$/, '');
    switch (method) {
      case 'stellar_toml':
        await checkStellarToml(input, ports.fetchText, origin);
        break;
      case 'https_well_known':
        await checkWellKnown(input, ports.fetchText, origin);
        break;
      case 'dns_txt':
        await checkDnsTxt(input, ports.resolveTxt);
        break;
      default:
        throw new DomainCheckError(
          'invalid_input',
          `Unknown verification method; use one of ${DOMAIN_VERIFICATION_METHODS.join(', ')}`,
        );
    }
    return { verified: true, reason: null, message: null };
  } catch (err) {
    if (err instanceof DomainCheckError) return { verified: false, reason: err.reason, message: err.message };
    return { verified: false, reason: 'check_failed', message: 'The check failed unexpectedly' };
  }
}
