import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import type { PaymentIdentifierStore } from '../domain/facilitator/payment-identifier';

/** x402 payment-identifier records (migration 0080; rules in domain/facilitator/payment-identifier.ts). */
export function createPaymentIdentifierRepository(db: Sequelize): PaymentIdentifierStore {
  return {
    async find(scope, id, operation, maxAgeSeconds) {
      const { rows } = await pgQuery<{
        fingerprint: string;
        payload_hash: string;
        status: number;
        body: unknown;
        headers: Record<string, string>;
      }>(
        db,
        `SELECT fingerprint, payload_hash, status, body, headers FROM x402_payment_identifiers
          WHERE scope = $1 AND payment_id = $2 AND operation = $3 AND created_at > now() -
            make_interval(secs => $4::double precision)`,
        [scope, id, operation, maxAgeSeconds],
        'payment_identifier_find',
      );
      const r = rows[0];
      return r
        ? {
            fingerprint: r.fingerprint,
            payloadHash: r.payload_hash,
            status: r.status,
            body: r.body,
            headers: r.headers ?? {},
          }
        : null;
    },

    async remember(key, answer, maxPerScope, maxAgeSeconds) {
      // An expired record of the same key is replaced; a live one is kept (the first final answer wins).
      await pgQuery(
        db,
        `INSERT INTO x402_payment_identifiers (scope, payment_id, operation, fingerprint, payload_hash, status,
          body, headers)
         VALUES ($1, $2, $3, $4, $5, $6, $7::json, $8::json)
         ON CONFLICT (scope, payment_id, operation) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
           payload_hash = EXCLUDED.payload_hash,
           status = EXCLUDED.status, body = EXCLUDED.body, headers = EXCLUDED.headers, created_at = now()
           WHERE x402_payment_identifiers.created_at <= now() - make_interval(secs => $9::double precision)`,
        [
          key.scope,
          key.id,
          key.operation,
          key.fingerprint,
          key.payloadHash,
          answer.status,
          JSON.stringify(answer.body),
          JSON.stringify(answer.headers),
          maxAgeSeconds,
        ],
        'payment_identifier_remember',
      );
      // Bounded per scope: the oldest records beyond the bound go.
      await pgQuery(
        db,
        `DELETE FROM x402_payment_identifiers WHERE scope = $1 AND (payment_id, operation) IN (
           SELECT payment_id, operation FROM x402_payment_identifiers WHERE scope = $1 ORDER BY
             created_at DESC OFFSET $2)`,
        [key.scope, maxPerScope],
        'payment_identifier_prune',
      );
    },
  };
}
