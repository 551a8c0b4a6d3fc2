import type { Migration } from './types';

/**
 * Payment attempts, settlements and receipts. The attempt state machine is enforced here, in the database, so no
 * process can move an attempt backwards whatever its code does:
 *   created -> verified | verification_failed
 *   verified -> settlement_pending | expired | replayed | cancelled
 *   settlement_pending -> settled | settlement_failed
 *   settled, settlement_failed, verification_failed, expired, replayed, cancelled: terminal
 * Replay protection is a unique index on (network, payer, nonce) over every attempt that verified.
 */
export const migration: Migration = {
  name: '0002-payments',
  async up(q) {
    await q(`
      CREATE TABLE payment_attempts (
        id text PRIMARY KEY,
        resource_id text REFERENCES resources(id),
        version_id text REFERENCES resource_versions(id),
        seller_id text REFERENCES sellers(id),
        payment_hash text NOT NULL,
        network text NOT NULL CHECK (network IN ('stellar:testnet', 'stellar:pubnet')),
        payer text NOT NULL,
        nonce text NOT NULL,
        asset_code text NOT NULL,
        asset_issuer text NOT NULL,
        amount numeric(20, 7) NOT NULL CHECK (amount > 0),
        pay_to text NOT NULL,
        status text NOT NULL CHECK (status IN ('created', 'verified', 'verification_failed', 'settlement_pending',
          'settled', 'settlement_failed', 'expired', 'replayed', 'cancelled')),
        failure_code text,
        failure_reason text,
        expires_at_ledger integer NOT NULL,
        authorization_xdr text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX payment_attempts_replay_uq ON payment_attempts (network, payer, nonce)
        WHERE status NOT IN ('verification_failed', 'created');
      CREATE INDEX payment_attempts_hash_idx ON payment_attempts (payment_hash);
      CREATE INDEX payment_attempts_seller_idx ON payment_attempts (seller_id, id);
      CREATE INDEX payment_attempts_resource_idx ON payment_attempts (resource_id, id);
      CREATE INDEX payment_attempts_open_idx ON payment_attempts (network, expires_at_ledger)
        WHERE status IN ('created', 'verified');

      CREATE FUNCTION payment_attempt_transition_check() RETURNS trigger AS $$
      BEGIN
        IF NEW.status = OLD.status THEN
          RETURN NEW;
        END IF;
        IF (OLD.status = 'created' AND NEW.status IN ('verified', 'verification_failed'))
          OR (OLD.status = 'verified' AND NEW.status IN ('settlement_pending', 'expired', 'replayed', 'cancelled'))
          OR (OLD.status = 'settlement_pending' AND NEW.status IN ('settled', 'settlement_failed')) THEN
          NEW.updated_at := now();
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'payment attempt % cannot move from % to %', OLD.id, OLD.status, NEW.status
          USING ERRCODE = 'check_violation';
      END;
      $$ LANGUAGE plpgsql;
      CREATE TRIGGER payment_attempts_transition BEFORE UPDATE OF status ON payment_attempts
        FOR EACH ROW EXECUTE FUNCTION payment_attempt_transition_check();

      CREATE TABLE settlements (
        id text PRIMARY KEY,
        payment_attempt_id text NOT NULL UNIQUE REFERENCES payment_attempts(id),
        transaction_hash text NOT NULL UNIQUE CHECK (transaction_hash ~ '^[0-9a-f]{64}$'),
        ledger integer,
        network text NOT NULL,
        amount numeric(20, 7) NOT NULL,
        asset_code text NOT NULL,
        asset_issuer text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'settled', 'failed')),
        evidence text NOT NULL,
        channel_account text,
        settled_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE receipts (
        id text PRIMARY KEY,
        payment_attempt_id text NOT NULL UNIQUE REFERENCES payment_attempts(id),
        settlement_id text REFERENCES settlements(id),
        resource_id text REFERENCES resources(id),
        version_id text REFERENCES resource_versions(id),
        seller_id text REFERENCES sellers(id),
        transaction_hash text,
        ledger integer,
        network text NOT NULL,
        amount numeric(20, 7) NOT NULL,
        asset_code text NOT NULL,
        asset_issuer text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'settled', 'failed')),
        evidence text NOT NULL,
        failure_code text,
        failure_reason text,
        settled_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX receipts_resource_idx ON receipts (resource_id);

      CREATE TABLE idempotency_keys (
        scope text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        status_code integer,
        response_body jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (scope, key)
      );
    `);
  },
};
