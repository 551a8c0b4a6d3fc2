import type { Migration } from './types';

/**
 * Issue #29 item 6, "proven hosts only" (Bazaar and catalog squatting):
 *
 * - `url_host(url)`: the lower-case host of an http(s) URL (no port, no credentials, no trailing dot), or NULL.
 * - `host_suffixes(host)`: the host and every parent domain of it ("a.b.example" -> {a.b.example, b.example, example}).
 * - `host_owner(host)`: the seller whose *verified* domain is the most specific one covering the host (equal to it or
 *   a parent of it), or NULL: the one seller that has proven the host. Read through sellers_verified_domain_uq.
 * - `search_documents.host_verified`: the document's seller is host_owner of its URL's host (the host is proven by
 *   its own seller); `host_claimed`: another seller is (the listing squats a proven host and is never served).
 *   Both are refreshed with the other ranking signals (indexing and the search-sync pass), so a company verifying its
 *   domain after a squatter listed under it takes the squat out of discovery within one pass.
 * - `search_documents.paid_payers`: the usage signal, payers weighted by what they paid at the cataloged price
 *   (data/search-index-repository.ts; server/README.md "Search and the Bazaar").
 */
export const migration: Migration = {
  name: '0050-proven-hosts',
  async up(q) {
    await q(`
      CREATE FUNCTION url_host(url text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT NULLIF(rtrim(lower(substring(url FROM '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?([^/:?#]+)')), '.'), '')
      $$;
      CREATE FUNCTION host_suffixes(host text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT COALESCE(array_agg(array_to_string(s.p[i:], '.') ORDER BY i), '{}')
          FROM (SELECT string_to_array(host, '.') AS p) s, generate_series(1, COALESCE(array_length(s.p, 1), 0)) AS i
      $$;
      CREATE FUNCTION host_owner(host text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT x.id FROM sellers x
         WHERE x.domain_verified_at IS NOT NULL AND lower(x.domain) = ANY (host_suffixes(host))
         ORDER BY length(x.domain) DESC, x.id LIMIT 1
      $$;
      ALTER TABLE search_documents
        ADD COLUMN host_verified boolean NOT NULL DEFAULT false,
        ADD COLUMN host_claimed boolean NOT NULL DEFAULT false,
        ADD COLUMN paid_payers double precision NOT NULL DEFAULT 0;
      UPDATE search_documents d SET host_verified = (o.owner IS NOT DISTINCT FROM d.seller_id),
                                    host_claimed = (o.owner IS NOT NULL AND o.owner <> d.seller_id)
        FROM (SELECT resource_id, host_owner(url_host(url)) AS owner FROM search_documents) o
       WHERE o.resource_id = d.resource_id;
    `);
  },
};
