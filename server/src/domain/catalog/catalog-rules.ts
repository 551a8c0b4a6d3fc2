import type { NetworkRegistry } from '../network-registry';
import { checkResourceTerms, type ResourceTerms, type RuleResult, type ValidationIssue } from './resource-rules';
import { checkExtensions, mcpToolName } from './extension-rules';
import type { Stroops } from '../amount';

/**
 * The discovery catalog's rule set: the resource rules plus the anti-poisoning rules that keep forged or ambiguous
 * metadata out of the index. Pure; the caller looks the facts up (seller, who owns a wallet or a domain, MCP tools
 * already cataloged) and passes them in. Used by validate, catalog and the indexing worker alike.
 *
 * Forged seller metadata:
 * - the caller's seller key belongs to another seller than `sellerId` (catalog answers 403 FORBIDDEN before this);
 * - `payTo` is not the seller's wallet and the seller did not declare it (`payToDeclared`), or it is the wallet of
 *   another seller (declared or not);
 * - the URL's host is neither the seller's domain nor a subdomain of it;
 * - the seller's domain is verified by another seller;
 * - the URL's host is under a domain another seller verified (`hostOwner`: the seller whose verified domain is the
 *   most specific one covering the host): one proven host belongs to one seller, so nobody lists or teaches the
 *   Bazaar a URL on a host that another seller has proven, even as a subdomain of its own unproven claim.
 */
export interface CatalogFacts {
  networks: NetworkRegistry;
  seller: { id: string; walletAddress: string; domain: string; domainVerified: boolean } | null;
  /** The seller the API key belongs to, when a seller key calls. */
  callerSellerId: string | null;
  trusted: boolean;
  payToDeclared: boolean;
  /** Id of the seller whose wallet address is payTo, if any. */
  payToOwner: string | null;
  domainVerifiedByOther: boolean;
  /**
   * The seller whose verified domain is the most specific one covering the URL's host (the host itself or a parent
   * domain), or null when no seller has proven it. Undefined: not looked up.
   */
  hostOwner?: string | null;
  /** Id of another active resource with the same MCP server URL and tool name, if any. */
  mcpToolConflict: string | null;
  /** FACILITATOR_MIN_AMOUNT: a price below it is refused (validate and catalog; see resource-rules.ts). */
  minimumStroops?: Stroops;
}

export const FIELD_PREFIX = 'resource.';

export function checkCatalogTerms(terms: ResourceTerms, facts: CatalogFacts): RuleResult {
  const base = checkResourceTerms(terms, {
    networks: facts.networks,
    seller: facts.seller,
    trusted: facts.trusted,
    fieldPrefix: FIELD_PREFIX,
    minimumStroops: facts.minimumStroops,
  });
  const errors: ValidationIssue[] = [...base.errors];
  // The base rules only warn about a foreign payTo; here it is an error unless declared (below).
  const warnings: ValidationIssue[] = base.warnings.filter((w) => w.field !== `${FIELD_PREFIX}payTo`);
  const forged = (field: string, message: string, code: ValidationIssue['code'] = 'CATALOG_VALIDATION_FAILED') =>
    errors.push({ code, field, message, reason: 'forged_seller_metadata' });

  const seller = facts.seller;
  if (facts.callerSellerId !== null && seller && facts.callerSellerId !== seller.id) {
    forged(
      'sellerId',
      'this API key belongs to another seller: a seller may catalog only its own resources',
      'FORBIDDEN',
    );
  }
  const payToValid = !base.errors.some((e) => e.field === `${FIELD_PREFIX}payTo`);
  if (seller && payToValid && terms.payTo !== seller.walletAddress) {
    if (facts.payToOwner !== null && facts.payToOwner !== seller.id) {
      forged(`${FIELD_PREFIX}payTo`, 'payTo is the wallet address of another seller');
    } else if (!facts.payToDeclared) {
      forged(
        `${FIELD_PREFIX}payTo`,
        "payTo is not the seller's wallet address; set payToDeclared to declare it as the seller's recipient",
      );
    } else {
      warnings.push({
        code: 'CATALOG_VALIDATION_FAILED',
        field: `${FIELD_PREFIX}payTo`,
        message: "payTo differs from the seller's wallet address (declared by the seller)",
        reason: 'forged_seller_metadata',
      });
    }
  }
  if (seller) {
    const hostProblem = urlHostProblem(terms.url, seller.domain);
    if (hostProblem) forged(`${FIELD_PREFIX}url`, hostProblem);
    if (facts.domainVerifiedByOther)
      forged('sellerId', `the domain ${seller.domain.toLowerCase().replace(/\.$/, '')} is verified by another seller`);
    const claimed = hostClaimedByOther(terms.url, seller.id, facts.hostOwner);
    if (claimed) forged(`${FIELD_PREFIX}url`, claimed);
  }

  const ext = checkExtensions(terms, FIELD_PREFIX);
  errors.push(...ext.errors);
  warnings.push(...ext.warnings);
  if (facts.mcpToolConflict !== null && terms.type === 'mcp') {
    errors.push({
      code: 'CATALOG_VALIDATION_FAILED',
      field: `${FIELD_PREFIX}extensions.mcp.toolName`,
      message:
        `ambiguous MCP metadata: resource ${facts.mcpToolConflict} already offers tool ` +
        `${mcpToolName(terms.extensions) ?? ''} on ${terms.url}`,
      reason: 'ambiguous_mcp',
    });
  }
  return { errors, warnings };
}

/**
 * The rules every write path applies (POST/PATCH /v1/resources as well as the catalog), so that no seller can
 * register another seller's endpoint or recipient and have verify-by-URL attribute that seller's payments to it:
 * the URL's host is the seller's domain or a subdomain of it.
 */
export function urlHostProblem(url: string, sellerDomain: string): string | null {
  const host = hostOf(url);
  const domain = sellerDomain.toLowerCase().replace(/\.$/, '');
  if (host !== null && host !== domain && !host.endsWith(`.${domain}`))
    return `the URL's host ${host} is not the seller's domain ${domain} or a subdomain of it`;
  return null;
}

/** Why a URL's host is not the seller's to list: another seller proved it (hostOwner), or null. */
export function hostClaimedByOther(url: string, sellerId: string, hostOwner: string | null | undefined): string | null {
  if (hostOwner === undefined || hostOwner === null || hostOwner === sellerId) return null;
  return (
    `the URL's host ${hostOf(url) ?? url} is under a domain another seller has verified: one proven host belongs ` +
    `to one seller`
  );
}

/**
 * POST/PATCH /v1/resources: payTo must be the seller's own wallet, the address it proved at sign-up (SEP-53 wallet
 * proof). A different recipient is possible only through the discovery catalog with `payToDeclared`, and never
 * another seller's wallet.
 */
export function resourceOwnershipIssues(
  terms: Pick<ResourceTerms, 'url' | 'payTo'>,
  seller: { walletAddress: string; domain: string },
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const hostProblem = urlHostProblem(terms.url, seller.domain);
  if (hostProblem)
    issues.push({
      code: 'CATALOG_VALIDATION_FAILED',
      field: 'url',
      message: hostProblem,
      reason: 'forged_seller_metadata',
    });
  if (terms.payTo !== seller.walletAddress) {
    issues.push({
      code: 'CATALOG_VALIDATION_FAILED',
      field: 'payTo',
      message: "payTo must be the seller's own wallet address (proven at sign-up)",
      reason: 'forged_seller_metadata',
    });
  }
  return issues;
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return null;
  }
}
