/**
 * Seller domain verification: a seller proves control of its domain by publishing a challenge token through one of
 * three methods (SEP-1 stellar.toml, DNS TXT, an HTTPS well-known file). Pure domain code: the network is reached
 * only through the injectable ports (DomainCheckPorts); the real ones are adapters in server/src/net/.
 */
export {
  DOMAIN_VERIFICATION_METHODS,
  challengeInstructions,
  newChallengeToken,
  type ChallengeInstructions,
  type DomainVerificationMethod,
} from './challenge';
export { checkDomain, type DomainCheckResult } from './check-domain';
export { DOMAIN_CHECK_REASONS, DomainCheckError, type DomainCheckReason } from './errors';
export type { DomainCheckInput, DomainCheckOptions, DomainCheckPorts } from './ports';
export { isValidSellerDomain, LOCAL_DOMAIN_HINT } from './seller-domain';
