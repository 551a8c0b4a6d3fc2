/**
 * Route template safety. A template is an absolute path whose segments are either literals of unreserved
 * characters or one whole `{param}` placeholder. Anything that could make a URL mean something else when it is
 * expanded or normalised is refused: traversal (`.`/`..`), empty segments (`//`), schemes, percent-encoding of any
 * kind (encoded slashes, dots, NULs), backslashes, query strings, fragments, whitespace, unbalanced, nested, empty or
 * duplicate placeholders.
 */
import { match, TokenData, type Token } from 'path-to-regexp';

export interface RouteTemplateProblem {
  message: string;
}

const LITERAL_SEGMENT = /^[A-Za-z0-9._~-]+$/;
const PARAM_SEGMENT = /^\{([A-Za-z_][A-Za-z0-9_]{0,63})\}$/;
export const MAX_ROUTE_TEMPLATE_LENGTH = 512;

export function checkRouteTemplate(template: string): RouteTemplateProblem | null {
  if (template.length === 0 || template.length > MAX_ROUTE_TEMPLATE_LENGTH) {
    return { message: `must be 1 to ${MAX_ROUTE_TEMPLATE_LENGTH} characters` };
  }
  if (/[\u0000-\u0020\u007f-\uffff]/.test(template))
    return { message: 'must not contain whitespace, control or non-ASCII characters' };
  if (template.includes('://') || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(template))
    return { message: 'must be a path, not a URL with a scheme' };
  if (!template.startsWith('/')) return { message: 'must start with /' };
  if (template.includes('%')) return { message: 'must not contain percent-encoded characters' };
  if (template.includes('\\')) return { message: 'must not contain backslashes' };
  if (/[?#]/.test(template)) return { message: 'must not contain a query string or fragment' };
  if (template === '/') return null;
  const segments = template.slice(1).split('/');
  const seen = new Set<string>();
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if (segment === '') {
      if (i === segments.length - 1) continue; // one trailing slash is allowed
      return { message: 'must not contain empty segments (//)' };
    }
    if (segment === '.' || segment === '..') return { message: 'must not contain . or .. segments' };
    const param = PARAM_SEGMENT.exec(segment);
    if (param) {
      if (seen.has(param[1])) return { message: `placeholder {${param[1]}} appears twice` };
      seen.add(param[1]);
      if (seen.size > MAX_PLACEHOLDERS) return { message: `at most ${MAX_PLACEHOLDERS} placeholders` };
      continue;
    }
    if (segment.includes('{') || segment.includes('}')) {
      return { message: `segment "${segment}" has an unbalanced, nested, empty or partial {placeholder}` };
    }
    if (!LITERAL_SEGMENT.test(segment))
      return { message: `segment "${segment}" has characters outside A-Z a-z 0-9 . _ ~ -` };
  }
  return null;
}

/** The placeholder names of a valid template, in order. */
export function templateParams(template: string): string[] {
  return [...template.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]);
}

/** Whether a concrete (or placeholder-carrying) URL path fits the template. */
export function pathMatchesTemplate(path: string, template: string): boolean {
  // Segment by segment (no regular expression compiled per call): a literal segment matches itself; a placeholder
  // segment matches itself or one non-empty segment of path characters (never a slash).
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return false;
  for (let i = 0; i < want.length; i++) {
    if (got[i] === want[i]) continue;
    if (!PARAM_SEGMENT.test(want[i]) || !PATH_SEGMENT.test(got[i])) return false;
  }
  return true;
}

/** One non-empty URL path segment (RFC 3986 pchar, percent signs included). */
const PATH_SEGMENT = /^[A-Za-z0-9._~%!$&'()*+,;=:@-]+$/;

/** At most this many placeholders in a route template or resource URL. */
export const MAX_PLACEHOLDERS = 16;

/** An absolute http(s) URL as written, split without normalising (WHATWG URL would percent-encode the braces). */
export function splitUrl(url: string): { origin: string; path: string; rest: string } | null {
  const m = /^(https?:\/\/[^/?#]*)([^?#]*)(.*)$/i.exec(url);
  if (!m) return null;
  return { origin: m[1], path: m[2] === '' ? '/' : m[2], rest: m[3] };
}

/**
 * Where a resource URL may hold `{placeholders}`: only as whole path segments (`/items/{id}`), at most
 * MAX_PLACEHOLDERS, never in the host, the query or the fragment, never two in one segment (`{a}{b}`) nor next to
 * literal text (`item-{id}`). Returns the problem, or null when the URL is acceptable.
 */
export function checkUrlPlaceholders(url: string): string | null {
  const parts = splitUrl(url);
  if (!parts) return null; // the URL rules report a malformed URL
  if (/[{}]/.test(parts.origin)) return 'placeholders may not stand in the host';
  if (/[{}]/.test(parts.rest)) return 'placeholders may stand only in path segments, not in the query or fragment';
  let count = 0;
  for (const segment of parts.path.split('/')) {
    if (!/[{}]/.test(segment)) continue;
    if (!PARAM_SEGMENT.test(segment))
      return (
        `segment "${segment.slice(0, 80)}": a placeholder must be a whole path segment (no adjacent placeholders, ` +
        `no text around it)`
      );
    count++;
  }
  if (count > MAX_PLACEHOLDERS) return `at most ${MAX_PLACEHOLDERS} placeholders`;
  return null;
}

/** The static prefix a resource URL is indexed under (see migration 0005): up to the last `/` before its first
 * placeholder. */
export function urlMatchKey(url: string): string | null {
  const parts = splitUrl(url);
  if (!parts || checkUrlPlaceholders(url) !== null || !parts.path.includes('{')) return null;
  const firstParam = parts.path.indexOf('{');
  return parts.origin + parts.path.slice(0, parts.path.lastIndexOf('/', firstParam) + 1);
}

/** The match keys a concrete URL could be indexed under: its origin plus each path prefix ending in `/` (bounded). */
export function candidateMatchKeys(url: string, maxSegments = 64): string[] {
  const parts = splitUrl(url);
  if (!parts) return [];
  const keys: string[] = [];
  for (let i = parts.path.indexOf('/'); i !== -1 && keys.length < maxSegments; i = parts.path.indexOf('/', i + 1)) {
    keys.push(parts.origin + parts.path.slice(0, i + 1));
  }
  return keys;
}

type UrlMatcher = (url: string) => boolean;
const matchers = new Map<string, UrlMatcher>();
const MAX_CACHED_MATCHERS = 2_000;

/**
 * A kept matcher (path-to-regexp, compiled once per template and cached) telling whether a concrete URL is an
 * instance of a resource URL. Placeholders count only where checkUrlPlaceholders allows them; a URL that breaks
 * those rules (a row stored before they existed) matches only itself. Placeholder values are one non-empty path
 * segment; the origin compares case-insensitively, the path exactly; the request's query and fragment are ignored
 * unless the resource URL has a query, which must then be equal.
 */
export function urlTemplateMatcher(template: string): UrlMatcher {
  const cached = matchers.get(template);
  if (cached) return cached;
  const parts = splitUrl(template);
  let matcher: UrlMatcher;
  if (!parts || checkUrlPlaceholders(template) !== null || !parts.path.includes('{')) {
    matcher = (url) => url === template;
  } else {
    const tokens: Token[] = [];
    for (const segment of parts.path.split('/').slice(1)) {
      const param = PARAM_SEGMENT.exec(segment);
      if (param) tokens.push({ type: 'text', value: '/' }, { type: 'param', name: param[1] });
      else tokens.push({ type: 'text', value: `/${segment}` });
    }
    const pathMatch = match(new TokenData(tokens), { decode: false, sensitive: true, trailing: false, end: true });
    const origin = parts.origin.toLowerCase();
    const query = parts.rest.split('#')[0];
    matcher = (url) => {
      const u = splitUrl(url);
      if (!u || u.origin.toLowerCase() !== origin) return false;
      if (query && u.rest.split('#')[0] !== query) return false;
      return pathMatch(u.path) !== false;
    };
  }
  if (matchers.size >= MAX_CACHED_MATCHERS) matchers.delete(matchers.keys().next().value as string);
  matchers.set(template, matcher);
  return matcher;
}
