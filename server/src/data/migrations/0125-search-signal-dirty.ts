import type { Migration } from './types';

/**
 * An incremental search-sync pass (issue 31): the ranking signals of a search document are recomputed when one of
 * their inputs changed, instead of one UPDATE over every document every 30 seconds.
 *
 * - `search_signal_dirty`: an append-only queue of what changed, written by triggers in the transaction that made the
 *   change (so a change is never lost and never seen before it commits). A row names documents by one of:
 *   `resource_id` (that document), `seller_id` alone (every listing of the seller: its verification or wallet
 *   changed), `seller_id` + `payer` (the seller's listings paid by that wallet: one of the seller's listings now pays
 *   to it, self-dealing), `pay_to` (the documents paid to that address: their payee paid someone, circular flows),
 *   `host` (the documents whose URL host is that domain or under it: host ownership moved). The search-sync worker
 *   (data/search-index-repository.ts) turns the wider rows into `resource_id` rows, then recomputes bounded batches
 *   of documents, deleting their rows in the same transaction.
 * - Triggers: payment_attempts rows that count (settled, settlement_failed; inserted, updated or deleted), sellers
 *   (verification, domain, wallet), resources (seller or payTo), resource_probes and resource_liveness_days (uptime).
 *   The verify path (attempts created and verified) fires none of them.
 * - Time windows (30 days of payments, 7 days of probes) move without any write: each pass marks the documents whose
 *   rows left a window since the previous pass (`search_signal_sync.aged_at`), read through the indexes below.
 * - `search_signal_sync.scores_version`: the fingerprint of the score expressions (ranking.ts weights); a pass that
 *   finds another rescored every document in batches, so a weight change still needs no migration.
 *   `audit_after`: a rolling check of a few hundred documents per pass, a backstop that converges on the full pass.
 * - `search_index_state.vocabulary_generation`: bumped when the vocabulary gains a word or is recounted, so a
 *   search can reuse a query's word lookup and know, in its one statement, whether it is still current.
 */
export const migration: Migration = {
  name: '0125-search-signal-dirty',
  async up(q) {
    await q(`
      CREATE TABLE search_signal_dirty (
        id bigserial PRIMARY KEY,
        resource_id text,
        seller_id text,
        payer text,
        pay_to text,
        host text
      );
      CREATE INDEX search_signal_dirty_resource_idx ON search_signal_dirty (resource_id);
      -- Bumped by every indexing transaction that adds a word to the vocabulary and by every recount: a search that
      -- reuses a query's word lookup checks it in its one statement (data/search-repository.ts).
      ALTER TABLE search_index_state ADD COLUMN vocabulary_generation bigint NOT NULL DEFAULT 0;
      ALTER TABLE search_signal_sync ADD COLUMN aged_at timestamptz, ADD COLUMN scores_version text,
        ADD COLUMN audit_after text;

      CREATE INDEX search_documents_pay_to_idx ON search_documents (pay_to);
      CREATE INDEX payment_attempts_counted_created_idx ON payment_attempts (created_at)
        WHERE status IN ('settled', 'settlement_failed');
      CREATE INDEX payment_attempts_settled_updated_idx ON payment_attempts (updated_at) WHERE status = 'settled';
      CREATE INDEX resource_probes_checked_idx ON resource_probes (checked_at);
      CREATE INDEX resource_liveness_days_day_idx ON resource_liveness_days (day);

      CREATE FUNCTION search_dirty_payment() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP <> 'INSERT' AND OLD.resource_id IS NOT NULL THEN
          INSERT INTO search_signal_dirty (resource_id) VALUES (OLD.resource_id);
          IF OLD.status = 'settled' THEN INSERT INTO search_signal_dirty (pay_to) VALUES (OLD.payer); END IF;
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.resource_id IS NOT NULL AND (TG_OP = 'INSERT'
            OR OLD.resource_id IS DISTINCT FROM NEW.resource_id) THEN
          INSERT INTO search_signal_dirty (resource_id) VALUES (NEW.resource_id);
        END IF;
        IF TG_OP <> 'DELETE' AND NEW.status = 'settled' AND (TG_OP = 'INSERT' OR OLD.status <> 'settled'
            OR OLD.payer IS DISTINCT FROM NEW.payer) THEN
          INSERT INTO search_signal_dirty (pay_to) VALUES (NEW.payer);
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER search_dirty_payment_ins AFTER INSERT ON payment_attempts FOR EACH ROW
        WHEN (NEW.status IN ('settled', 'settlement_failed')) EXECUTE FUNCTION search_dirty_payment();
      CREATE TRIGGER search_dirty_payment_upd AFTER UPDATE ON payment_attempts FOR EACH ROW
        WHEN (NEW.status IN ('settled', 'settlement_failed') OR OLD.status IN ('settled', 'settlement_failed'))
        EXECUTE FUNCTION search_dirty_payment();
      CREATE TRIGGER search_dirty_payment_del AFTER DELETE ON payment_attempts FOR EACH ROW
        WHEN (OLD.status IN ('settled', 'settlement_failed')) EXECUTE FUNCTION search_dirty_payment();

      CREATE FUNCTION search_dirty_seller() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP <> 'INSERT' THEN
          INSERT INTO search_signal_dirty (seller_id) VALUES (OLD.id);
          IF OLD.domain_verified_at IS NOT NULL AND OLD.domain IS NOT NULL THEN
            INSERT INTO search_signal_dirty (host) VALUES (lower(OLD.domain));
          END IF;
        END IF;
        IF TG_OP <> 'DELETE' THEN
          INSERT INTO search_signal_dirty (seller_id) VALUES (NEW.id);
          IF NEW.domain_verified_at IS NOT NULL AND NEW.domain IS NOT NULL THEN
            INSERT INTO search_signal_dirty (host) VALUES (lower(NEW.domain));
          END IF;
        END IF;
        RETURN NULL;
      END $$;
      CREATE TRIGGER search_dirty_seller_ins AFTER INSERT ON sellers FOR EACH ROW
        WHEN (NEW.domain_verified_at IS NOT NULL) EXECUTE FUNCTION search_dirty_seller();
      CREATE TRIGGER search_dirty_seller_upd AFTER UPDATE ON sellers FOR EACH ROW
        WHEN (OLD.domain_verified_at IS DISTINCT FROM NEW.domain_verified_at OR OLD.domain IS DISTINCT FROM NEW.domain
              OR OLD.wallet_address IS DISTINCT FROM NEW.wallet_address)
        EXECUTE FUNCTION search_dirty_seller();
      CREATE TRIGGER search_dirty_seller_del AFTER DELETE ON sellers FOR EACH ROW
        EXECUTE FUNCTION search_dirty_seller();

      CREATE FUNCTION search_dirty_resources_new() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO search_signal_dirty (seller_id, payer)
          SELECT DISTINCT seller_id, pay_to FROM changed_rows WHERE seller_id IS NOT NULL AND pay_to IS NOT NULL;
        RETURN NULL;
      END $$;
      CREATE TRIGGER search_dirty_resources_ins AFTER INSERT ON resources REFERENCING NEW TABLE AS changed_rows
        FOR EACH STATEMENT EXECUTE FUNCTION search_dirty_resources_new();
      CREATE TRIGGER search_dirty_resources_del AFTER DELETE ON resources REFERENCING OLD TABLE AS changed_rows
        FOR EACH STATEMENT EXECUTE FUNCTION search_dirty_resources_new();
      CREATE FUNCTION search_dirty_resource_moved() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO search_signal_dirty (seller_id, payer) VALUES (OLD.seller_id, OLD.pay_to), (NEW.seller_id,
          NEW.pay_to);
        RETURN NULL;
      END $$;
      CREATE TRIGGER search_dirty_resources_upd AFTER UPDATE ON resources FOR EACH ROW
        WHEN (OLD.seller_id IS DISTINCT FROM NEW.seller_id OR OLD.pay_to IS DISTINCT FROM NEW.pay_to)
        EXECUTE FUNCTION search_dirty_resource_moved();

      CREATE FUNCTION search_dirty_uptime() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO search_signal_dirty (resource_id) SELECT DISTINCT resource_id FROM changed_rows
         WHERE resource_id IS NOT NULL;
        RETURN NULL;
      END $$;
      CREATE TRIGGER search_dirty_probes_ins AFTER INSERT ON resource_probes REFERENCING NEW TABLE AS changed_rows
        FOR EACH STATEMENT EXECUTE FUNCTION search_dirty_uptime();
      CREATE TRIGGER search_dirty_liveness_ins AFTER INSERT ON resource_liveness_days
        REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION search_dirty_uptime();
      CREATE TRIGGER search_dirty_liveness_upd AFTER UPDATE ON resource_liveness_days
        REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION search_dirty_uptime();
    `);
  },
};
