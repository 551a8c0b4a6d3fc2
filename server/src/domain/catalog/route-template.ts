/**
 * Route template safety. A template is an absolute path whose segments are either literals of unreserved
 * characters or one whole `{param}` placeholder. Anything that could make a URL mean something else when it is
 * expanded or normalised is refused: traversal (`.`/`..`), empty segments (`//`), schemes, percent-encoding of any
 * kind (encoded slashes, dots, NULs), backslashes, query strings, fragments, whitespace, unbalanced, nested, empty or
 * duplicate placeholders.
 */
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
  if (/[\u0000-\u0020\u007f-\uffff]/.test(template)) return { message: 'must not contain whitespace, control or non-ASCII characters' };
  if (template.includes('://') || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(template)) return { message: 'must be a path, not a URL with a scheme' };
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
      continue;
    }
    if (segment.includes('{') || segment.includes('}')) {
      return { message: `segment "${segment}" has an unbalanced, nested, empty or partial {placeholder}` };
    }
    if (!LITERAL_SEGMENT.test(segment)) return { message: `segment "${segment}" has characters outside A-Z a-z 0-9 . _ ~ -` };
  }
  return null;
}

/** The placeholder names of a valid template, in order. */
export function templateParams(template: string): string[] {
  return [...template.matchAll(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]);
}

/** Whether a concrete (or placeholder-carrying) URL path fits the template. */
export function pathMatchesTemplate(path: string, template: string): boolean {
  const pattern = template
    .split('/')
    .map((seg) => (PARAM_SEGMENT.test(seg) ? `(?:${escapeRegex(seg)}|[A-Za-z0-9._~%!$&'()*+,;=:@-]+)` : escapeRegex(seg)))
    .join('/');
  return new RegExp(`^${pattern}$`).test(path);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
