import type { ErrorCode } from '../errors';
import { formatAmount, isAmount, toStroops, type Stroops } from '../amount';
import type { NetworkRegistry } from '../network-registry';
import { isPayToAddress } from '../network-registry';
import { checkRouteTemplate, checkUrlPlaceholders, pathMatchesTemplate } from './route-template';
import { checkJsonSchema } from './json-schema';

/**
 * The terms of a resource as a seller submits them (create, update, validate and catalog share them): the amount is
 * the decimal string the seller wrote, so that validation names it as written. Once checked, the terms are kept as
 * `ListedTerms` (`listedTerms`).
 */
export interface ResourceTerms {
  type: 'http' | 'mcp';
  name: string;
  description: string;
  url: string;
  routeTemplate: string;
  network: string;
  payTo: string;
  assetCode: string;
  assetIssuer: string;
  amount: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  extensions: Record<string, unknown>;
}

/** A resource's terms as listed and stored: the seller's terms with the amount in Stroops. */
export type ListedTerms = Omit<ResourceTerms, 'amount'> & { amount: Stroops };

/** Checked terms (`checkResourceTerms` found no error) as listed: the amount converted once, to Stroops. */
export function listedTerms<T extends ResourceTerms>(terms: T): Omit<T, 'amount'> & { amount: Stroops } {
  return { ...terms, amount: toStroops(terms.amount) };
}

/** Listed terms as a seller would submit them, to check them again: the amount in its shortest form ("0.01"). */
export function submittedTerms<T extends ListedTerms>(terms: T): Omit<T, 'amount'> & { amount: string } {
  return { ...terms, amount: formatAmount(terms.amount) };
}

export interface ValidationIssue {
  code: ErrorCode;
  field: string;
  message: string;
  /** Poisoning class, for metrics (catalog validation failures by reason); never part of an API response. */
  reason?: IssueReason;
}

/** Why an issue was raised, as a metric label (catalog validation failures by reason). */
export type IssueReason =
  | 'seller_not_found'
  | 'forged_seller_metadata'
  | 'route_template'
  | 'unsupported_network'
  | 'unsupported_asset'
  | 'domain_unverified'
  | 'invalid_schema'
  | 'ambiguous_mcp'
  | 'extension'
  | 'invalid_field';

/** The reason of an issue: its own, else derived from its code and field. */
export function issueReason(issue: ValidationIssue): IssueReason {
  if (issue.reason) return issue.reason;
  switch (issue.code) {
    case 'ROUTE_TEMPLATE_INVALID':
      return 'route_template';
    case 'UNSUPPORTED_NETWORK':
      return 'unsupported_network';
    case 'UNSUPPORTED_ASSET':
      return 'unsupported_asset';
    case 'SELLER_DOMAIN_UNVERIFIED':
      return 'domain_unverified';
    case 'FORBIDDEN':
      return 'forged_seller_metadata';
    default:
      break;
  }
  if (/Schema$/.test(issue.field)) return 'invalid_schema';
  if (issue.field.includes('extensions.mcp')) return 'ambiguous_mcp';
  if (issue.field.includes('extensions')) return 'extension';
  return 'invalid_field';
}

export interface RuleContext {
  networks: NetworkRegistry;
  seller: { id: string; walletAddress: string; domainVerified: boolean } | null;
  /** The caller asks for trusted catalog status (requires a verified domain). */
  trusted: boolean;
  /** Prefix of field paths in issues, e.g. "resource." for the discovery endpoints. */
  fieldPrefix?: string;
  /**
   * The facilitator's minimum (FACILITATOR_MIN_AMOUNT, in stroops): a price below it is refused here, where the
   * seller can fix it, instead of listed and then refused on every payment (issue 32).
   */
  minimumStroops?: Stroops;
}

export interface RuleResult {
  errors: ValidationIssue[];
  warnings: ValidationIssue[];
}

const MAX_URL_LENGTH = 2048;

/**
 * Every rule a resource must pass before it is stored or cataloged. Returns issues instead of throwing so that
 * `validate` can report all of them at once. Pure: the caller supplies the seller it loaded.
 */
export function checkResourceTerms(terms: ResourceTerms, ctx: RuleContext): RuleResult {
  const p = ctx.fieldPrefix ?? '';
  const errors: ValidationIssue[] = [];
  const warnings: ValidationIssue[] = [];
  const err = (code: ErrorCode, field: string, message: string) => errors.push({ code, field: p + field, message });
  const warn = (code: ErrorCode, field: string, message: string) => warnings.push({ code, field: p + field, message });

  // sellerId and trusted sit next to the resource in the discovery requests: no field prefix for them.
  if (!ctx.seller)
    errors.push({
      code: 'CATALOG_VALIDATION_FAILED',
      field: 'sellerId',
      message: 'seller does not exist',
      reason: 'seller_not_found',
    });
  if (ctx.trusted && ctx.seller && !ctx.seller.domainVerified) {
    errors.push({
      code: 'SELLER_DOMAIN_UNVERIFIED',
      field: p ? 'trusted' : 'sellerId',
      message: 'trusted catalog status requires a verified seller domain',
    });
  }

  const network = ctx.networks.get(terms.network);
  if (!network) {
    err(
      'UNSUPPORTED_NETWORK',
      'network',
      `${terms.network} is not supported; supported networks: ${ctx.networks
        .list()
        .map((n) => n.network)
        .join(', ')}`,
    );
  } else if (!ctx.networks.asset(terms.network, terms.assetCode, terms.assetIssuer)) {
    const accepted = network.assets.map((a) => `${a.code} issued by ${a.issuer}`).join(', ') || 'none';
    err(
      'UNSUPPORTED_ASSET',
      'assetCode',
      `${terms.assetCode} issued by ${terms.assetIssuer} is not accepted on ${terms.network}; accepted there: ` +
        `${accepted}`,
    );
  }
  if (terms.network === 'stellar:pubnet' && ctx.seller && !ctx.seller.domainVerified) {
    err(
      'SELLER_DOMAIN_UNVERIFIED',
      'network',
      'resources on stellar:pubnet (real money) require a verified seller domain',
    );
  }

  if (!isAmount(terms.amount) || toStroops(terms.amount) <= 0n) {
    err(
      'CATALOG_VALIDATION_FAILED',
      'amount',
      'must be a positive decimal amount written with a dot and at most 7 decimals, e.g. 0.01 or 12.5',
    );
  } else if (ctx.minimumStroops !== undefined && toStroops(terms.amount) < ctx.minimumStroops) {
    const minimum = formatAmount(ctx.minimumStroops);
    err(
      'CATALOG_VALIDATION_FAILED',
      'amount',
      `must be at least ${minimum} ${terms.assetCode}: the facilitator refuses smaller payments ` +
        `(FACILITATOR_MIN_AMOUNT)`,
    );
  }
  if (!isPayToAddress(terms.payTo)) {
    err('CATALOG_VALIDATION_FAILED', 'payTo', 'must be a valid Stellar account (G...) or contract (C...) address');
  } else if (ctx.seller && terms.payTo !== ctx.seller.walletAddress) {
    warn('CATALOG_VALIDATION_FAILED', 'payTo', "payTo differs from the seller's wallet address");
  }

  const routeProblem = checkRouteTemplate(terms.routeTemplate);
  if (routeProblem) err('ROUTE_TEMPLATE_INVALID', 'routeTemplate', routeProblem.message);

  const urlProblem = checkUrl(terms.url, terms.network);
  // Placeholders only as whole path segments: verify-by-URL matches them (see route-template.ts urlTemplateMatcher).
  const placeholderProblem = urlProblem ? null : checkUrlPlaceholders(terms.url);
  if (urlProblem) err('CATALOG_VALIDATION_FAILED', 'url', urlProblem);
  else if (placeholderProblem) err('ROUTE_TEMPLATE_INVALID', 'url', placeholderProblem);
  else if (!routeProblem) {
    const pathname = rawPath(terms.url);
    if (!pathMatchesTemplate(pathname, terms.routeTemplate)) {
      err('ROUTE_TEMPLATE_INVALID', 'routeTemplate', `the URL path ${pathname} does not match the route template`);
    }
    if (new URL(terms.url).protocol === 'http:')
      warn('CATALOG_VALIDATION_FAILED', 'url', 'plain http URL: buyers should call https endpoints');
  }

  for (const field of ['inputSchema', 'outputSchema'] as const) {
    const problem = checkJsonSchema(terms[field]);
    if (problem) err('CATALOG_VALIDATION_FAILED', field, problem);
  }

  if (typeof terms.extensions !== 'object' || terms.extensions === null || Array.isArray(terms.extensions)) {
    err('CATALOG_VALIDATION_FAILED', 'extensions', 'must be an object');
  } else {
    for (const key of Object.keys(terms.extensions)) {
      if (key !== 'bazaar' && key !== 'mcp')
        err('CATALOG_VALIDATION_FAILED', `extensions.${key}`, 'unknown extension (known: bazaar, mcp)');
    }
    if ('mcp' in terms.extensions && terms.type !== 'mcp') {
      err('CATALOG_VALIDATION_FAILED', 'extensions.mcp', 'the mcp extension is only valid on resources of type mcp');
    }
  }
  if (!terms.description.trim())
    warn('CATALOG_VALIDATION_FAILED', 'description', 'an empty description ranks low in search');
  return { errors, warnings };
}

function checkUrl(url: string, network: string): string | null {
  if (url.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'must be an https URL';
  if (parsed.protocol === 'http:' && network === 'stellar:pubnet') return 'must be https on stellar:pubnet';
  if (parsed.username || parsed.password) return 'must not carry credentials';
  if (parsed.hash) return 'must not have a fragment';
  if (!parsed.hostname) return 'must have a host';
  return null;
}

/** The URL's path as written, with {placeholders} kept (WHATWG URL would percent-encode the braces). */
function rawPath(url: string): string {
  const afterScheme = url.replace(/^[a-z]+:\/\/[^/?#]*/i, '');
  const path = afterScheme.split(/[?#]/)[0];
  return path === '' ? '/' : path;
}
