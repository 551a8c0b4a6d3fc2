import { domainToASCII } from 'node:url';

/**
 * Bazaar v2 service metadata on a payment's `resource` (issue #30): `serviceName`, `tags`, `iconUrl`, with the
 * rules of the stock @x402/extensions 2.27 (`isValidServiceName`, `sanitizeTags`, `isValidIconUrl`, mirrored by its
 * Go and Python packages). Soft-drop: an invalid field is left out, never a reason to refuse the payment or the
 * rest of the discovery data.
 */
export interface ServiceMetadata {
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
}

const MAX_SERVICE_NAME_LEN = 32;
const MAX_TAG_LEN = 32;
const MAX_TAGS = 5;
const MAX_ICON_URL_LEN = 2048;
const CONTROL_CHAR = /[\x00-\x1f\x7f]/;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;
const LOOPBACK_HOSTNAMES = new Set(['localhost', 'localhost.localdomain', 'ip6-localhost', 'ip6-loopback']);
const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

/** Non-empty printable ASCII (U+0020–U+007E), at most 32 characters. */
export function isValidServiceName(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_SERVICE_NAME_LEN && PRINTABLE_ASCII.test(v);
}

/** Entries that are printable ASCII of 1..32 characters, first occurrence of each (case-insensitive), at most 5. */
export function sanitizeTags(v: unknown): string[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: string[] = [];
  const seen = new Set<string>();
  for (const t of v) {
    if (typeof t !== 'string' || t.length === 0 || t.length > MAX_TAG_LEN || !PRINTABLE_ASCII.test(t)) continue;
    if (seen.has(t.toLowerCase())) continue;
    seen.add(t.toLowerCase());
    out.push(t);
    if (out.length === MAX_TAGS) break;
  }
  return out.length > 0 ? out : undefined;
}

/**
 * An absolute http(s) URL of at most 2048 characters, without control characters or credentials, whose host (percent-
 * decoded, IDN-normalized) is a name: not an IP literal, a loopback name, a decimal or a hex encoding of an address.
 * The icon is never fetched by this service; the rules keep a client that shows it away from internal addresses.
 */
export function isValidIconUrl(v: unknown): v is string {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_ICON_URL_LEN || CONTROL_CHAR.test(v)) return false;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return false;
  }
  if (
    (u.protocol !== 'http:' && u.protocol !== 'https:') ||
    u.username !== '' ||
    u.password !== '' ||
    u.host.startsWith('[')
  )
    return false;
  let host: string;
  try {
    host = domainToASCII(decodeURIComponent(u.hostname)).toLowerCase();
  } catch {
    return false;
  }
  return (
    host !== '' &&
    !LOOPBACK_HOSTNAMES.has(host) &&
    !IPV4.test(host) &&
    !/^\d+$/.test(host) &&
    !/^0x[0-9a-f]+$/i.test(host)
  );
}

/** Only the fields that pass their rule; the others are dropped silently (the spec's soft-drop). */
export function sanitizeServiceMetadata(resource: unknown): ServiceMetadata {
  if (typeof resource !== 'object' || resource === null) return {};
  const r = resource as Record<string, unknown>;
  const out: ServiceMetadata = {};
  if (isValidServiceName(r.serviceName)) out.serviceName = r.serviceName;
  const tags = sanitizeTags(r.tags);
  if (tags) out.tags = tags;
  if (isValidIconUrl(r.iconUrl)) out.iconUrl = r.iconUrl;
  return out;
}

/**
 * A loopback host as a local development server names itself (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`):
 * what the Bazaar learns under LOCAL_DEV_DOMAINS although no seller can prove it.
 */
export function isLocalHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return (
    h === 'localhost' ||
    h.endsWith('.localhost') ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) ||
    h === '[::1]' ||
    h === '::1'
  );
}
