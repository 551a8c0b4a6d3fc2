import type { Sequelize } from 'sequelize';
import { DEFERRED_COMMIT, pgQuery } from './pg-query';
import { ATTEMPT_COLUMNS, toAttempt } from './payment-rows';
import { amountColumn } from './amount-column';
import type { AttemptRepository, NewAttempt } from '../domain/facilitator/types';

/**
 * Payment attempts. Query style: parameterised SQL through pgQuery (prepared statements), as every state change is a
 * compare-and-set on the current status (the database trigger forbids backward moves anyway) and verify's claim sits
 * on every request's path.
 */
const INSERT_COLUMNS = `id, resource_id, version_id, seller_id, payment_hash, network, payer, nonce, asset_code,
  asset_issuer,
  amount, pay_to, status, failure_code, failure_reason, expires_at_ledger, authorization_xdr`;

const insertValues = (a: NewAttempt) => [
  a.id,
  a.resourceId,
  a.versionId,
  a.sellerId,
  a.paymentHash,
  a.network,
  a.payer,
  a.nonce,
  a.assetCode,
  a.assetIssuer,
  amountColumn(a.amount),
  a.payTo,
  a.status,
  a.failureCode,
  a.failureReason,
  a.expiresAtLedger,
  a.authorizationXdr,
];

/** A replay key is held by attempts that verified (a failed verify or a created row never holds it). */
const HOLDS_REPLAY_KEY =
  `network = $1 AND payer = $2 AND nonce = $3 AND status ` + `NOT IN ('verification_failed', 'created')`;

/**
 * The guard of a verified attempt linked to a cataloged resource (`termsGuard`): the resource is still active with the
 * record's version and exactly the record's terms (seller, network, payTo, asset, amount), checked in the insert's own
 * statement, so a record is never linked to terms that changed after they were read (or cached).
 */
const RESOURCE_HAS_RECORD_TERMS = `EXISTS (SELECT 1 FROM resources r WHERE r.id = $2 AND r.status = 'active'
  AND r.current_version_id = $3 AND r.seller_id = $4 AND r.network = $6 AND r.pay_to = $12 AND r.asset_code = $9
  AND r.asset_issuer IS NOT DISTINCT FROM $10 AND r.amount = $11::numeric)`;

export function createAttemptRepository(db: Sequelize): AttemptRepository {
  async function changed(name: string, text: string, values: unknown[]): Promise<number> {
    return (await pgQuery(db, text, values, name)).rowCount;
  }

  return {
    async findAttempt(id) {
      const { rows } = await pgQuery(
        db,
        `SELECT ${ATTEMPT_COLUMNS} FROM payment_attempts WHERE id = $1`,
        [id],
        'attempt_find',
      );
      return rows[0] ? toAttempt(rows[0]) : null;
    },

    /**
     * verify's write path in as few statements as the replay guarantee allows (issue #14): the attempt is claimed
     * with one `INSERT ... ON CONFLICT DO NOTHING RETURNING` (the unique replay index decides across processes); only
     * a conflict reads the row it lost to.
     */
    async insertVerifiedAttempt(a, opts) {
      // deferCommit (verify's record, which moves no money): the commit does not wait for its WAL flush (pg-query.ts
      // DEFERRED_COMMIT); settle's claim of this attempt is a flushed commit later in the same WAL, so it never
      // outlives a lost attempt row.
      const deferred = opts?.deferCommit === true;
      const guarded = opts?.termsGuard === true && a.resourceId !== null;
      const returning = `RETURNING ${ATTEMPT_COLUMNS}${deferred ? `, ${DEFERRED_COMMIT}` : ''}`;
      const { rows } = await pgQuery(
        db,
        guarded
          ? `INSERT INTO payment_attempts (${INSERT_COLUMNS})
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17
              WHERE ${RESOURCE_HAS_RECORD_TERMS}
             ON CONFLICT DO NOTHING ${returning}`
          : `INSERT INTO payment_attempts (${INSERT_COLUMNS})
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
             ON CONFLICT DO NOTHING ${returning}`,
        insertValues(a),
        `verify_insert_attempt${guarded ? '_guarded' : ''}${deferred ? '_deferred' : ''}`,
      );
      if (rows[0]) return { attempt: toAttempt(rows[0]) };
      const held = await pgQuery<{ id: string }>(
        db,
        `SELECT id FROM payment_attempts WHERE ${HOLDS_REPLAY_KEY} LIMIT 1`,
        [a.network, a.payer, a.nonce],
        'verify_replay_holder',
      );
      if (held.rows[0] || !guarded) return { replayOf: held.rows[0]?.id ?? null };
      // Nothing holds the authorization: the guard refused (the resource's terms are not the record's any more).
      return { replayOf: null, termsChanged: true };
    },

    async findByReplayKey(network, payer, nonce) {
      const { rows } = await pgQuery(
        db,
        `SELECT ${ATTEMPT_COLUMNS} FROM payment_attempts WHERE ${HOLDS_REPLAY_KEY} LIMIT 1`,
        [network, payer, nonce],
        'attempt_by_replay_key',
      );
      return rows[0] ? toAttempt(rows[0]) : null;
    },

    async findByHash(paymentHash) {
      const { rows } = await pgQuery(
        db,
        `SELECT ${ATTEMPT_COLUMNS} FROM payment_attempts WHERE payment_hash = $1`,
        [paymentHash],
        'attempt_by_hash',
      );
      return rows.map(toAttempt);
    },

    async insertAttempt(a) {
      try {
        await pgQuery(
          db,
          `INSERT INTO payment_attempts (${INSERT_COLUMNS}, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, now(), now())`,
          insertValues(a),
          'attempt_insert',
        );
        return 'inserted';
      } catch (err) {
        if ((err as { code?: unknown }).code === '23505') return 'replay'; // unique_violation
        throw err;
      }
    },

    async claimForSettlement(id, resource, sellerId, payerTurnSince) {
      // verified -> settlement_pending, only while the payer's turn is this settle's: no other transfer of the payer
      // and asset in flight (the unique index, migration 0043) and none finished since `payerTurnSince` (the moment
      // before this settle's simulation: a transfer finished after it may have spent what the simulation counted).
      // One statement (issue #31: as a transaction of four round trips it sat idle in transaction on every settle's
      // path while the service's event loop was busy): it locks this attempt, then the payer's other transfers in
      // flight or finished since `payerTurnSince`; a final answer being written to one right now is waited for and
      // FOR UPDATE then reads that row's new version (its status and updated_at), as the second statement of the
      // transaction did with its new snapshot.
      try {
        const { rows } = await pgQuery<{ claimed: boolean; busy: boolean; status: string | null }>(
          db,
          `WITH me AS MATERIALIZED (
             SELECT id, status, network, payer, asset_code, asset_issuer FROM payment_attempts WHERE id = $1
             FOR UPDATE
           ), other AS MATERIALIZED (
             SELECT o.status FROM payment_attempts o JOIN me p ON o.network = p.network AND o.payer = p.payer
                AND o.asset_code = p.asset_code AND o.asset_issuer = p.asset_issuer AND o.id <> p.id
              WHERE o.status = 'settlement_pending'
                 OR (o.status IN ('settled', 'settlement_failed') AND o.updated_at >= $5::timestamptz)
              FOR UPDATE OF o
           ), claimed AS (
             UPDATE payment_attempts p SET status = 'settlement_pending',
               resource_id = COALESCE(resource_id, $2), seller_id = COALESCE(seller_id, $3),
                 version_id = COALESCE(version_id, $4)
              WHERE id = $1 AND status = 'verified' AND (SELECT status FROM me) = 'verified'
                AND NOT EXISTS (SELECT 1 FROM other)
             RETURNING id
           )
           SELECT EXISTS (SELECT 1 FROM claimed) AS claimed,
             EXISTS (SELECT 1 FROM other WHERE status = 'settlement_pending') AS busy,
             (SELECT status FROM me) AS status`,
          [id, resource?.id ?? null, resource?.sellerId ?? sellerId, resource?.versionId ?? null, payerTurnSince],
          'attempt_claim_for_settlement',
        );
        const out = rows[0];
        if (out.claimed) return 'claimed';
        if (out.busy) return 'payer_busy';
        return out.status === 'verified' ? 'payer_busy' : 'lost';
      } catch (err) {
        // payment_attempts_one_in_flight_per_payer (migration 0043): the payer's other transfer was claimed meanwhile.
        if ((err as { code?: string }).code === '23505') return 'payer_busy';
        throw err;
      }
    },

    async payerTurn(network, payer, assetCode, assetIssuer) {
      const { rows } = await pgQuery<{ at: Date; busy: boolean }>(
        db,
        `SELECT now() AS at, EXISTS (SELECT 1 FROM payment_attempts WHERE network = $1 AND payer = $2 AND ` +
          `asset_code = $3 AND asset_issuer = $4 AND status = 'settlement_pending') AS busy`,
        [network, payer, assetCode, assetIssuer],
        'attempt_payer_turn',
      );
      return rows[0];
    },

    async expireAttempt(id, reason) {
      await changed(
        'attempt_expire',
        `UPDATE payment_attempts SET status = 'expired', failure_code = 'AUTH_EXPIRED', failure_reason = $2 ` +
          `WHERE id = $1 AND status = 'verified'`,
        [id, reason],
      );
    },

    async failClaimedAttempt(id, code, reason) {
      await changed(
        'attempt_fail_claimed',
        `UPDATE payment_attempts SET status = 'settlement_failed', failure_code = $2, failure_reason = $3 WHERE ` +
          `id = $1 AND status = 'settlement_pending'`,
        [id, code, reason],
      );
    },

    async failAbandonedClaims(olderThanSeconds, limit) {
      return changed(
        'attempt_fail_abandoned',
        `UPDATE payment_attempts SET status = 'settlement_failed', failure_code = 'SETTLEMENT_FAILED',
           failure_reason = 'the settlement was interrupted before any transaction was submitted'
         WHERE id IN (
           SELECT a.id FROM payment_attempts a
           WHERE a.status = 'settlement_pending' AND a.updated_at < now() - make_interval(secs => $1::double precision)
             AND NOT EXISTS (SELECT 1 FROM settlements s WHERE s.payment_attempt_id = a.id)
           ORDER BY a.updated_at LIMIT $2::int)
           AND status = 'settlement_pending' AND updated_at < now() - make_interval(secs => $1::double precision)`,
        [olderThanSeconds, limit],
      );
    },

    async expireStale(network, latestLedger) {
      return changed(
        'attempt_expire_stale',
        `UPDATE payment_attempts SET status = 'expired', failure_code = 'AUTH_EXPIRED',
           failure_reason = 'the authorization expired before settlement'
         WHERE status = 'verified' AND network = $1 AND expires_at_ledger < $2::int`,
        [network, latestLedger],
      );
    },
  };
}
