import type { DomainCheckPorts } from '../domain/sellers/domain-verification/ports';
import { createSafeFetcher, type FetchText } from './safe-fetcher';

/**
 * Local-development mode of domain verification (LOCAL_DEV_DOMAINS=true; OFF by default, never for a deployment).
 *
 * On one machine a seller's domain cannot be proven: `localhost` and IPs are refused as seller domains, and a real
 * domain does not point at the developer's laptop. In this mode only names under `.test` (RFC 2606, reserved for
 * testing, never delegated on the Internet) are treated as local:
 * - they resolve to 127.0.0.1 (and only to it), and their checks are fetched over http from
 *   `http://<name>.test:<port>` (LOCAL_DEV_DOMAINS_PORT, default 8402), where the seller's app serves
 *   `/.well-known/marketplace-verification.txt` or `/.well-known/stellar.toml`;
 * - `dns_txt` cannot be completed for them (nothing serves `.test` zones): use `https_well_known` or `stellar_toml`.
 * Every other domain keeps the normal rules (https only, public addresses only, real DNS).
 */
export const LOCAL_DEV_SUFFIX = '.test';

export function isLocalDevDomain(domain: string): boolean {
  return domain.toLowerCase().replace(/\.$/, '').endsWith(LOCAL_DEV_SUFFIX);
}

export interface LocalDevDomainCheck {
  ports: DomainCheckPorts;
  urlBase: (domain: string) => string;
}

export function createLocalDevDomainCheck(opts: {
  port: number;
  real: DomainCheckPorts;
  timeoutMs?: number;
}): LocalDevDomainCheck {
  // Loopback only: the lookup answers 127.0.0.1 for the .test name itself, so no other address can be reached.
  const loopback: FetchText = createSafeFetcher({
    timeoutMs: opts.timeoutMs,
    allowInsecureForTests: true,
    allowPrivateAddressesForTests: true,
    lookup: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  return {
    urlBase: (domain) => (isLocalDevDomain(domain) ? `http://${domain}:${opts.port}` : `https://${domain}`),
    ports: {
      fetchText: (url) => (isLocalDevDomain(new URL(url).hostname) ? loopback(url) : opts.real.fetchText(url)),
      resolveTxt: (name) => (isLocalDevDomain(name) ? Promise.resolve([]) : opts.real.resolveTxt(name)),
    },
  };
}
