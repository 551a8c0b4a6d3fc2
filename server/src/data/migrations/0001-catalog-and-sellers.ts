import type { Migration } from './types';

/** Sellers, their API keys and domain challenges; resources with version history and catalog events. */
export const migration: Migration = {
  name: '0001-catalog-and-sellers',
  async up(q) {
    await q(`
      CREATE TABLE sellers (
        id text PRIMARY KEY,
        display_name text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 120),
        wallet_address text NOT NULL UNIQUE CHECK (wallet_address ~ '^G[A-Z2-7]{55}$'),
        domain text NOT NULL CHECK (char_length(domain) <= 253),
        domain_verified_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        seller_id text REFERENCES sellers(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('seller', 'operator')),
        key_hash bytea NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz,
        CHECK ((role = 'seller') = (seller_id IS NOT NULL))
      );

      CREATE TABLE domain_challenges (
        id text PRIMARY KEY,
        seller_id text NOT NULL REFERENCES sellers(id) ON DELETE CASCADE,
        domain text NOT NULL,
        token text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'verified', 'failed')),
        checked_method text,
        failure_reason text,
        checked_at timestamptz,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX domain_challenges_seller_idx ON domain_challenges (seller_id, created_at DESC);

      CREATE TABLE resources (
        id text PRIMARY KEY,
        seller_id text NOT NULL REFERENCES sellers(id),
        current_version_id text,
        version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
        type text NOT NULL CHECK (type IN ('http', 'mcp')),
        name text NOT NULL,
        description text NOT NULL,
        url text NOT NULL,
        route_template text NOT NULL,
        network text NOT NULL CHECK (network IN ('stellar:testnet', 'stellar:pubnet')),
        pay_to text NOT NULL,
        asset_code text NOT NULL,
        asset_issuer text NOT NULL,
        amount numeric(20, 7) NOT NULL CHECK (amount > 0),
        input_schema jsonb NOT NULL,
        output_schema jsonb NOT NULL,
        extensions jsonb NOT NULL DEFAULT '{}'::jsonb,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleted')),
        deleted_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX resources_seller_idx ON resources (seller_id, id);
      CREATE INDEX resources_listing_idx ON resources (status, network, asset_code, type, id);

      CREATE TABLE resource_versions (
        id text PRIMARY KEY,
        resource_id text NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
        version integer NOT NULL CHECK (version >= 1),
        name text NOT NULL,
        description text NOT NULL,
        url text NOT NULL,
        route_template text NOT NULL,
        network text NOT NULL,
        pay_to text NOT NULL,
        asset_code text NOT NULL,
        asset_issuer text NOT NULL,
        amount numeric(20, 7) NOT NULL,
        input_schema jsonb NOT NULL,
        output_schema jsonb NOT NULL,
        extensions jsonb NOT NULL,
        seller_domain text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (resource_id, version)
      );
      ALTER TABLE resources ADD CONSTRAINT resources_current_version_fk
        FOREIGN KEY (current_version_id) REFERENCES resource_versions(id) DEFERRABLE INITIALLY DEFERRED;

      CREATE TABLE catalog_events (
        id text PRIMARY KEY,
        resource_id text NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
        version_id text REFERENCES resource_versions(id) ON DELETE CASCADE,
        seller_id text NOT NULL REFERENCES sellers(id),
        kind text NOT NULL CHECK (kind IN ('created', 'updated', 'deleted', 'cataloged')),
        indexed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX catalog_events_resource_idx ON catalog_events (resource_id, id);
      CREATE INDEX catalog_events_unindexed_idx ON catalog_events (id) WHERE indexed_at IS NULL;

      -- rate-limiter-flexible's PostgreSQL store, shared by every server process.
      CREATE TABLE rate_limits (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      );
    `);
  },
};
