import type { Migration } from './types';

/**
 * The discovery index: one search document per discoverable resource, built asynchronously from catalog events by
 * the resource-indexing worker, with its ranking signals refreshed by the search-sync worker.
 *
 * - `document` is a weighted tsvector (name A > description B > schema text / tool name / route C) behind a GIN
 *   index; search uses websearch_to_tsquery('english', q) against it.
 * - `amount` is NUMERIC so price filters compare decimals exactly in SQL.
 * - `discoverable` is false when the document failed the anti-poisoning rules at indexing time (for example a
 *   resource created through /v1/resources with a payTo that is not the seller's wallet); such rows never appear.
 * - `catalog_declarations` records what a seller declared when cataloging (the payTo it vouches for, trusted status).
 */
export const migration: Migration = {
  name: '0004-discovery',
  async up(q) {
    await q(`
      CREATE TABLE search_documents (
        resource_id text PRIMARY KEY REFERENCES resources(id) ON DELETE CASCADE,
        seller_id text NOT NULL REFERENCES sellers(id),
        version_id text NOT NULL,
        resource_version integer NOT NULL,
        type text NOT NULL,
        name text NOT NULL,
        description text NOT NULL,
        url text NOT NULL,
        route_template text NOT NULL,
        network text NOT NULL,
        pay_to text NOT NULL,
        asset_code text NOT NULL,
        asset_issuer text NOT NULL,
        amount numeric(20, 7) NOT NULL,
        status text NOT NULL,
        extension_names text[] NOT NULL DEFAULT '{}',
        mcp_tool_name text,
        discoverable boolean NOT NULL,
        rejection_reasons jsonb NOT NULL DEFAULT '[]'::jsonb,
        document tsvector NOT NULL,
        metadata_quality double precision NOT NULL CHECK (metadata_quality BETWEEN 0 AND 1),
        schema_completeness double precision NOT NULL CHECK (schema_completeness BETWEEN 0 AND 1),
        seller_verified boolean NOT NULL DEFAULT false,
        uptime double precision CHECK (uptime BETWEEN 0 AND 1),
        settlement_success double precision CHECK (settlement_success BETWEEN 0 AND 1),
        settlement_count integer NOT NULL DEFAULT 0,
        signals_refreshed_at timestamptz,
        indexed_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX search_documents_document_gin ON search_documents USING GIN (document) WHERE discoverable;
      CREATE INDEX search_documents_listing_idx ON search_documents (resource_id DESC) WHERE discoverable;
      CREATE INDEX search_documents_filter_idx ON search_documents (network, asset_code, type, amount) WHERE
        discoverable;
      CREATE INDEX search_documents_seller_idx ON search_documents (seller_id, resource_id) WHERE discoverable;

      CREATE TABLE catalog_declarations (
        resource_id text PRIMARY KEY REFERENCES resources(id) ON DELETE CASCADE,
        seller_id text NOT NULL REFERENCES sellers(id),
        declared_pay_to text,
        trusted boolean NOT NULL DEFAULT false,
        declared_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE INDEX catalog_events_unindexed_created_idx ON catalog_events (created_at) WHERE indexed_at IS NULL;
      CREATE INDEX resources_mcp_url_idx ON resources (url) WHERE type = 'mcp' AND status = 'active';
    `);
  },
};
