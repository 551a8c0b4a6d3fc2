import type { components } from '../generated/openapi';
import { presentListingFields } from './presenters';
import type { DiscoveryItem } from '../domain/discovery/types';
import type { Trust } from '../domain/trust/types';
import type { CatalogOutcome } from '../domain/discovery/discovery-service';

/** Discovery domain objects -> the contract's JSON shapes. */
type S = components['schemas'];

/** Fields added to the new object, not spread into another literal (data/listing-rows.ts toListingItem says why). */
export function presentDiscoveryResource(r: DiscoveryItem): S['DiscoveryResource'] {
  const shown: S['DiscoveryResource'] = Object.assign(presentListingFields(r), { hostVerified: r.hostVerified });
  if (r.trust) shown.trust = presentTrust(r.trust);
  return shown;
}

/** The trust block (issue #33): what this service measured about a listing. */
export function presentTrust(t: Trust): S['ResourceTrust'] {
  return Object.assign({ ...t }, { checkedAt: t.checkedAt ? t.checkedAt.toISOString() : null });
}

export function presentDiscoveryPage(page: {
  items: DiscoveryItem[];
  nextCursor: string | null;
  partialResults: boolean;
}): S['DiscoveryPage'] {
  return {
    resources: page.items.map(presentDiscoveryResource),
    nextCursor: page.nextCursor,
    partialResults: page.partialResults,
  };
}

export function presentSearchPage(page: {
  items: DiscoveryItem[];
  nextCursor: string | null;
  partialResults: boolean;
  strategy: string;
}): S['SearchPage'] {
  return {
    resources: page.items.map(presentDiscoveryResource),
    ranking: { strategy: page.strategy },
    partialResults: page.partialResults,
    nextCursor: page.nextCursor,
  };
}

export function presentCatalogResult(c: CatalogOutcome): S['CatalogResult'] {
  return {
    ok: true,
    resourceId: c.resourceId,
    versionId: c.versionId,
    catalogEventId: c.catalogEventId,
    indexingStatus: 'queued',
    warnings: c.warnings,
  };
}
