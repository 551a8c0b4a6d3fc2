/**
 * Why a domain check failed. These are data (stable snake_case codes the HTTP layer can pass through), not
 * exceptions: `checkDomain` turns every `DomainCheckError` into `{ verified: false, reason, message }`.
 */
export const DOMAIN_CHECK_REASONS = [
  'invalid_domain', // the seller domain is not an acceptable hostname
  'invalid_input', // wallet address or token malformed
  'insecure_url', // not https (or not http(s) at all, or carries credentials)
  'private_address', // the host is, or resolves to, a non-public address
  'dns_failure', // the name did not resolve, or the resolver failed
  'connection_failed', // TCP/TLS failure talking to the host
  'timeout', // the whole fetch or DNS query took longer than allowed
  'too_large', // the response body exceeded the size limit
  'redirect', // the host answered 3xx; redirects are never followed
  'http_status', // any other status than 200
  'invalid_toml', // stellar.toml could not be parsed
  'account_missing', // stellar.toml ACCOUNTS does not list the seller's wallet
  'record_missing', // no TXT record at the verification name
  'token_mismatch', // the published token is absent or differs
  'check_failed', // an unexpected error inside a port
] as const;

export type DomainCheckReason = (typeof DOMAIN_CHECK_REASONS)[number];

/** Thrown by the ports and the parser. Messages are for humans and never contain secrets or response bodies. */
export class DomainCheckError extends Error {
  constructor(
    public readonly reason: DomainCheckReason,
    message: string,
  ) {
    super(message);
    this.name = 'DomainCheckError';
  }
}

/** A short, safe token for messages: the error's code (ECONNREFUSED, CERT_HAS_EXPIRED, ...), never its text. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? code : 'error';
}
