import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import type { ChannelLeaseRepository } from '../domain/facilitator/types';

/**
 * The shared channel pool's lease table (migration 0005). A free row is one with no holder (or an expired holder)
 * and no pinned transaction; it is taken with FOR UPDATE SKIP LOCKED, so processes never wait on one another and
 * never take the same row. Query style: parameterised SQL through pgQuery (prepared statements): every change is a
 * compare-and-set on the holder, the take a row lock.
 */
export function createChannelLeaseRepository(db: Sequelize): ChannelLeaseRepository {
  return {
    async register(network, addresses) {
      if (addresses.length === 0) return;
      await pgQuery(
        db,
        `INSERT INTO channel_leases (network, address) SELECT $1::text, a FROM unnest($2::text[]) AS a ON CONFLICT DO NOTHING`,
        [network, addresses],
        'channel_lease_register',
      );
    },

    async take(network, addresses, token, ttlSeconds) {
      const { rows } = await pgQuery<{ address: string }>(
        db,
        `UPDATE channel_leases SET holder = $3, leased_until = now() + make_interval(secs => $4::double precision), updated_at = now()
         WHERE (network, address) = (
           SELECT network, address FROM channel_leases
            WHERE network = $1 AND address = ANY($2::text[]) AND transaction_hash IS NULL
              AND (holder IS NULL OR leased_until < now())
            ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING address`,
        [network, addresses, token, ttlSeconds],
        'channel_lease_take',
      );
      return rows[0]?.address ?? null;
    },

    async renew(network, address, token, ttlSeconds) {
      await pgQuery(
        db,
        `UPDATE channel_leases SET leased_until = now() + make_interval(secs => $4::double precision) WHERE network = $1 AND address = $2 AND holder = $3`,
        [network, address, token, ttlSeconds],
        'channel_lease_renew',
      );
    },

    async release(network, address, token) {
      await pgQuery(
        db,
        `UPDATE channel_leases SET holder = NULL, leased_until = NULL, updated_at = now()
         WHERE network = $1 AND address = $2 AND holder = $3 AND transaction_hash IS NULL`,
        [network, address, token],
        'channel_lease_release',
      );
    },

    async busy(network) {
      const { rows } = await pgQuery<{ n: number }>(
        db,
        `SELECT count(*)::int AS n FROM channel_leases WHERE network = $1
           AND (transaction_hash IS NOT NULL OR (holder IS NOT NULL AND leased_until >= now()))`,
        [network],
        'channel_lease_busy',
      );
      return rows[0].n;
    },
  };
}
