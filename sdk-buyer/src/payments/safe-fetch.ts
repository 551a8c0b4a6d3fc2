/**
 * Fetches made on an agent's behalf (call_paid_resource) go only to public addresses: a listing's URL must not turn
 * the buyer's machine into a proxy into its own network. Every hop's host is resolved and refused when any address
 * is loopback, private (RFC 1918, fc00::/7), link-local (169.254/16, fe80::/10, where cloud metadata lives),
 * CGNAT, unspecified, multicast or reserved, unless `allowPrivateNetworks` is set (local development: the local
 * network and test sellers listen on 127.0.0.1). Redirects are followed by hand, at most 3, each hop checked again;
 * a redirect after a payment header was sent is not followed with it (the header is dropped).
 *
 * Residual risk, stated: the check resolves the name, then fetch resolves it again (a DNS answer could change in
 * between); IP literals are checked exactly.
 */
import dns from 'node:dns/promises';
import { createLocalDevFetch, isLocalDevHost } from '../core/local-dev-fetch.js';
import net from 'node:net';

/** Why a `*.test` seller cannot be reached with local development domains off, naming the switch (issue 32). */
export const LOCAL_DEV_DOMAINS_OFF =
  'a local development name (*.test) that resolves nowhere while local development domains are off. To reach ' +
  'local sellers, turn them on: LOCAL_DEV_DOMAINS=true (the service and the paid-api-marketplace-mcp bin) or ' +
  'localDevDomains: true (createMarketplaceMcpServer)';

export class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError';
  readonly code = 'ADDRESS_NOT_ALLOWED';
}

export interface SafeFetchOptions {
  /** Allow loopback, private and link-local addresses (local development only). Default false. */
  allowPrivateNetworks?: boolean;
  /**
   * Local development domains (the service's LOCAL_DEV_DOMAINS switch): `*.test` hosts are sent to 127.0.0.1 over
   * localDevFetch. Off (default), a `*.test` host is refused with a message naming the switch.
   */
  localDevDomains?: boolean;
  /** Default 3. */
  maxRedirects?: number;
  /** Name resolution (tests). Default: the system resolver, every address. */
  lookup?: (hostname: string) => Promise<string[]>;
}

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['64:ff9b::', 96],
] as const)
  blocked.addSubnet(prefix, bits, 'ipv6');

/** True when `ip` is not a public unicast address. IPv4-mapped IPv6 is checked as IPv4. */
export function isPrivateAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return blocked.check(mapped[1], 'ipv4');
  const family = net.isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) return blocked.check(ip, 'ipv6');
  return true;
}

const defaultLookup = async (hostname: string) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/** Throws BlockedAddressError unless every address of the URL's host is public (or private ones are allowed). */
export async function assertPublicUrl(url: URL, options: SafeFetchOptions = {}): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new BlockedAddressError(`Only http(s) URLs are fetched, not ${url.protocol}`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const localName = isLocalDevHost(host);
  if (localName && options.localDevDomains) return; // sent to 127.0.0.1 by localDevFetch (safeFetch below)
  if (options.allowPrivateNetworks) return;
  const addresses = net.isIP(host)
    ? [host]
    : await (options.lookup ?? defaultLookup)(host).catch((err: unknown) => {
        // *.test never resolves: say which switch reaches it instead of a bare ENOTFOUND.
        if (localName) throw new BlockedAddressError(`${url.host}: ${LOCAL_DEV_DOMAINS_OFF}`);
        throw err;
      });
  const bad = addresses.find(isPrivateAddress);
  if (bad !== undefined || addresses.length === 0) {
    throw new BlockedAddressError(
      `${url.host} resolves to ${bad ?? 'no address'}, a private, loopback or link-local address: refused (set ` +
        `allowPrivateNetworks for local development)`,
    );
  }
}

/** A fetch that checks every hop (see the module comment). */
export function safeFetch(fetchImpl: typeof globalThis.fetch, options: SafeFetchOptions = {}): typeof globalThis.fetch {
  const maxRedirects = options.maxRedirects ?? 3;
  const base = options.localDevDomains ? createLocalDevFetch(fetchImpl) : fetchImpl;
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    let request = input instanceof Request ? input : new Request(input, init);
    for (let hop = 0; ; hop++) {
      await assertPublicUrl(new URL(request.url), options);
      const response = await base(new Request(request.clone(), { redirect: 'manual' }));
      const location = response.headers.get('location');
      if (response.status < 300 || response.status > 399 || !location) return response;
      await response.body?.cancel().catch(() => undefined);
      if (hop >= maxRedirects)
        throw new BlockedAddressError(`More than ${maxRedirects} redirects from ${new URL(request.url).host}`);
      const next = new URL(location, request.url);
      const headers = new Headers(request.headers);
      // A payment is for the URL it was signed for: never forwarded to another one.
      for (const h of ['payment-signature', 'x-payment', 'authorization', 'cookie']) headers.delete(h);
      const keepBody = response.status === 307 || response.status === 308;
      request = new Request(next, {
        method: keepBody ? request.method : request.method === 'HEAD' ? 'HEAD' : 'GET',
        headers,
        body: keepBody ? await request.clone().arrayBuffer() : undefined,
        redirect: 'manual',
      });
    }
  }) as typeof globalThis.fetch;
}
