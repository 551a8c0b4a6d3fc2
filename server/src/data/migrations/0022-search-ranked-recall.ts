import type { Migration } from './types';

/**
 * Ranked recall (ranking strategy pg-fts-recall-v3, domain/discovery/ranking.ts) and the Bazaar that learns.
 *
 * - Field weights of `search_documents.document` become: name A > tags and MCP tool name B > description C > schema
 *   text, route literals, URL host and path D. Existing documents are re-weighted here from what they hold (their
 *   description was B, their schema text C); the indexing worker writes new ones in the new layout.
 * - `search_vocabulary` holds every indexed lexeme with the number of discoverable documents carrying it: the
 *   document frequency of a query term (its IDF weight, and which terms are rare enough to read every match of) and
 *   the words typo tolerance corrects to (pg_trgm similarity, GIN trigram index). Lexemes without a letter (numbers)
 *   and longer than 40 characters are left out (a word unknown to it counts as rare). Indexing adds new words (count
 * 1);
 *   the search-sync worker recounts from ts_stat at most every few minutes.
 * - `search_documents.unique_payers` / `last_payment_at`: usage over 30 days (with `settlement_count`), refreshed by
 *   the search-sync worker from settled payment attempts; read at query time as a ranking term.
 * - `observed_resources` / `observed_payments`: resources learned from the `bazaar` extension of payments settled
 *   through /x402/settle (labelled observed, never trusted), with one row per settled transaction for their usage.
 */
export const migration: Migration = {
  name: '0022-search-ranked-recall',
  async up(q) {
    await q(`
      CREATE EXTENSION IF NOT EXISTS pg_trgm;

      UPDATE search_documents SET document =
          setweight(to_tsvector('english', name), 'A')
        || setweight(to_tsvector('english', COALESCE(regexp_replace(mcp_tool_name, '[_.-]+', ' ', 'g'), '')), 'B')
        || setweight(ts_filter(document, '{b}'), 'C')
        || setweight(ts_filter(document, '{c}'), 'D')
        || setweight(to_tsvector('english', regexp_replace(regexp_replace(url, '^[a-z]+://', ''),
          '[/._~{}:?=&-]+', ' ', 'g')), 'D');

      CREATE TABLE search_vocabulary (
        word text PRIMARY KEY,
        ndoc integer NOT NULL DEFAULT 1 CHECK (ndoc >= 0)
      );
      CREATE INDEX search_vocabulary_trgm ON search_vocabulary USING GIN (word gin_trgm_ops);
      CREATE INDEX search_vocabulary_prefix ON search_vocabulary (word text_pattern_ops);
      CREATE TABLE search_vocabulary_state (
        id smallint PRIMARY KEY CHECK (id = 1),
        refreshed_at timestamptz NOT NULL DEFAULT now()
      );
      INSERT INTO search_vocabulary (word, ndoc)
        SELECT word, ndoc FROM ts_stat('SELECT document FROM search_documents WHERE discoverable') WHERE
          word ~ '[[:alpha:]]' AND length(word) <= 40;
      INSERT INTO search_vocabulary_state (id, refreshed_at) VALUES (1, now());

      ALTER TABLE search_documents ADD COLUMN unique_payers integer NOT NULL DEFAULT 0,
                                   ADD COLUMN last_payment_at timestamptz;

      CREATE TABLE observed_resources (
        id text PRIMARY KEY,
        network text NOT NULL,
        resource_url text NOT NULL CHECK (length(resource_url) <= 2048),
        tool_name text NOT NULL DEFAULT '' CHECK (length(tool_name) <= 200),
        type text NOT NULL CHECK (type IN ('http', 'mcp')),
        route_template text,
        description text NOT NULL DEFAULT '' CHECK (length(description) <= 2000),
        mime_type text,
        pay_to text NOT NULL,
        asset text NOT NULL,
        amount text NOT NULL,
        bazaar jsonb NOT NULL,
        seller_id text REFERENCES sellers(id),
        first_seen_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        last_payment_at timestamptz NOT NULL,
        UNIQUE (network, resource_url, tool_name)
      );
      CREATE INDEX observed_resources_recent_idx ON observed_resources (last_payment_at DESC);
      CREATE TABLE observed_payments (
        network text NOT NULL,
        transaction text NOT NULL,
        observed_resource_id text NOT NULL REFERENCES observed_resources(id) ON DELETE CASCADE,
        payer text NOT NULL,
        amount text NOT NULL,
        paid_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (network, transaction)
      );
      CREATE INDEX observed_payments_resource_idx ON observed_payments (observed_resource_id, paid_at);
      CREATE INDEX payment_attempts_settled_recent_idx ON payment_attempts (resource_id, updated_at) WHERE
        status = 'settled';
    `);
  },
};
