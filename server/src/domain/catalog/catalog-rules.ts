import type { NetworkRegistry } from '../../ledger/network-registry';
import { checkResourceTerms, type ResourceTerms, type RuleResult, type ValidationIssue } from './resource-rules';
import { checkExtensions, mcpToolName } from './extension-rules';

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
 * - the seller's domain is verified by another seller.
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
  /** Id of another active resource with the same MCP server URL and tool name, if any. */
  mcpToolConflict: string | null;
}

export const FIELD_PREFIX = 'resource.';

export function checkCatalogTerms(terms: ResourceTerms, facts: CatalogFacts): RuleResult {
  const base = checkResourceTerms(terms, { networks: facts.networks, seller: facts.seller, trusted: facts.trusted, fieldPrefix: FIELD_PREFIX });
  const errors: ValidationIssue[] = [...base.errors];
  // The base rules only warn about a foreign payTo; here it is an error unless declared (below).
  const warnings: ValidationIssue[] = base.warnings.filter((w) => w.field !== `${FIELD_PREFIX}payTo`);
  const forged = (field: string, message: string, code: ValidationIssue['code'] = 'CATALOG_VALIDATION_FAILED') =>
    errors.push({ code, field, message, reason: 'forged_seller_metadata' });

  const seller = facts.seller;
  if (facts.callerSellerId !== null && seller && facts.callerSellerId !== seller.id) {
    forged('sellerId', 'this API key belongs to another seller: a seller may catalog only its own resources', 'FORBIDDEN');
  }
  const payToValid = !base.errors.some((e) => e.field === `${FIELD_PREFIX}payTo`);
  if (seller && payToValid && terms.payTo !== seller.walletAddress) {
    if (facts.payToOwner !== null && facts.payToOwner !== seller.id) {
      forged(`${FIELD_PREFIX}payTo`, 'payTo is the wallet address of another seller');
    } else if (!facts.payToDeclared) {
      forged(`${FIELD_PREFIX}payTo`, "payTo is not the seller's wallet address; set payToDeclared to declare it as the seller's recipient");
    } else {
      warnings.push({ code: 'CATALOG_VALIDATION_FAILED', field: `${FIELD_PREFIX}payTo`, message: "payTo differs from the seller's wallet address (declared by the seller)", reason: 'forged_seller_metadata' });
    }
  }
  if (seller) {
    const host = hostOf(terms.url);
    const domain = seller.domain.toLowerCase().replace(/\.$/, '');
    if (host !== null && host !== domain && !host.endsWith(`.${domain}`)) {
      forged(`${FIELD_PREFIX}url`, `the URL's host ${host} is not the seller's domain ${domain} or a subdomain of it`);
    }
    if (facts.domainVerifiedByOther) forged('sellerId', `the domain ${domain} is verified by another seller`);
  }

  const ext = checkExtensions(terms, FIELD_PREFIX);
  errors.push(...ext.errors);
  warnings.push(...ext.warnings);
  if (facts.mcpToolConflict !== null && terms.type === 'mcp') {
    errors.push({
      code: 'CATALOG_VALIDATION_FAILED',
      field: `${FIELD_PREFIX}extensions.mcp.toolName`,
      message: `ambiguous MCP metadata: resource ${facts.mcpToolConflict} already offers tool ${mcpToolName(terms.extensions) ?? ''} on ${terms.url}`,
      reason: 'ambiguous_mcp',
    });
  }
  return { errors, warnings };
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return null;
  }
}
