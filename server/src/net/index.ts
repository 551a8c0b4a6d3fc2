/**
 * Network I/O adapters the domain receives as ports: the SSRF-safe fetcher, the system DNS TXT resolver and the
 * local-development domain check (LOCAL_DEV_DOMAINS). The domain never reaches the network itself.
 */
export { createSafeFetcher, type ResolvedAddress, type SafeFetcherOptions, type FetchText } from './safe-fetcher';
export { createDnsTxtResolver, type DnsTxtResolverOptions } from './dns-resolver';
export {
  createLocalDevDomainCheck,
  isLocalDevDomain,
  LOCAL_DEV_SUFFIX,
  type LocalDevDomainCheck,
} from './local-dev-domain-check';
