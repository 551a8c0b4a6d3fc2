import net from 'node:net';

/**
 * What a refused seller domain's message adds (issue 32): `localhost` and IPs are refused, and the local-development
 * alternative is a `*.test` name, verified on loopback when the service runs with LOCAL_DEV_DOMAINS=true.
 */
export const LOCAL_DOMAIN_HINT =
  'localhost and IP addresses are refused: for local development use a name under .test such as shop.test (RFC ' +
  '2606), which the service verifies on 127.0.0.1 when started with LOCAL_DEV_DOMAINS=true';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A seller domain is a bare, lowercase DNS hostname: at least two labels, each 1-63 chars of [a-z0-9-] not starting
 * or ending with '-', at most 253 chars in all. No scheme, port, path, userinfo, trailing dot, IP literal or
 * `localhost` (nor `*.localhost`). Internationalised names must be given in their punycode (xn--) form.
 */
export function isValidSellerDomain(domain: string): boolean {
  if (typeof domain !== 'string' || domain.length === 0 || domain.length > 253) return false;
  if (net.isIP(domain) !== 0) return false;
  const labels = domain.split('.');
  if (labels.length < 2) return false;
  if (!labels.every((label) => LABEL.test(label))) return false;
  // An all-numeric last label would make it look like (or be parsed by URL as) an IPv4 address, e.g. 1.2.3 or 0x7f.1.
  const tld = labels[labels.length - 1];
  if (/^[0-9]+$/.test(tld) || /^0x[0-9a-f]*$/.test(tld)) return false;
  if (tld === 'localhost') return false;
  return true;
}
