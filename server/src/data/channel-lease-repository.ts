import type { Sequelize } from 'sequelize';
import { pgQuery } from './pg-query';
import type { ChannelLeaseRepository } from '../domain/facilitator/types';

/**
 * The shared channel pool's lease table (migration 0005; lease parties: 0075). A free row is one with no holder (or
 * an expired holder) and no pinned transaction. `take` takes one with FOR UPDATE SKIP LOCKED, so processes never wait
 * on one another and never take the same row; `takeFor` (what the pool uses) locks the network's rows to count each
 * party's busy channels first (fair capacity, issue #29). Query style: parameterised SQL through pgQuery (prepared
 * statements): every change is a
 * compare-and-set on the holder, the take a row lock.
 */
export function createChannelLeaseRepository(db: Sequelize): ChannelLeaseRepository {
  return {
    async register(network, addresses) {
      if (addresses.length === 0) return;
      await pgQuery(
        db,
        `INSERT INTO channel_leases (network, address) SELECT $1::text, a FROM unnest($2::text[]) AS a ON ` +
          `CONFLICT DO NOTHING`,
        [network, addresses],
        'channel_lease_register',
      );
    },

    async take(network, addresses, token, ttlSeconds) {
      const { rows } = await pgQuery<{ address: string }>(
        db,
        `UPDATE channel_leases SET holder = $3, leased_until = now() + make_interval(secs => $4::double
          precision), updated_at = now()
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

    async takeFor(network, addresses, token, ttlSeconds, claim) {
      // Every lease row of the network is locked, in address order (no deadlock between takers), so takes of one
      // network are serialised across processes and each counts the parties' busy channels as last committed (a row
      // lock waited for returns the row's newest version): no two takes can both see a party below its cap. The
      // statement then takes the least recently used free row, stamped with the party, only below every cap.
      const p = claim?.party;
      const { rows } = await pgQuery<{
        address: string | null;
        free: boolean;
        seller_n: number;
        payer_n: number;
        client_n: number;
      }>(
        db,
        `WITH locked AS MATERIALIZED (
           SELECT address, updated_at, seller_id, payer, client,
                  (transaction_hash IS NOT NULL OR (holder IS NOT NULL AND leased_until >= now())) AS busy
             FROM channel_leases WHERE network = $1 ORDER BY address FOR UPDATE
         ), counts AS (
           SELECT count(*) FILTER (WHERE busy AND seller_id = $5::text)::int AS seller_n,
                  count(*) FILTER (WHERE busy AND payer = $6::text)::int AS payer_n,
                  count(*) FILTER (WHERE busy AND client = $7::text)::int AS client_n
             FROM locked
         ), pick AS (
           SELECT address FROM locked WHERE NOT busy AND address = ANY($2::text[]) ORDER BY updated_at LIMIT 1
         ), taken AS (
           UPDATE channel_leases SET holder = $3, leased_until = now() + make_interval(secs =>
             $4::double precision), updated_at = now(),
                  seller_id = $5::text, payer = $6::text, client = $7::text
            WHERE network = $1 AND address = (SELECT address FROM pick)
              AND (SELECT ($8::int IS NULL OR seller_n < $8::int) AND ($9::int IS NULL OR payer_n <
                $9::int) AND ($10::int IS NULL OR client_n < $10::int) FROM counts)
           RETURNING address
         )
         SELECT (SELECT address FROM taken) AS address, EXISTS (SELECT 1 FROM pick) AS free, seller_n,
           payer_n, client_n FROM counts`,
        [
          network,
          addresses,
          token,
          ttlSeconds,
          p?.sellerId ?? null,
          p?.payer ?? null,
          p?.client ?? null,
          claim?.caps.seller ?? null,
          claim?.caps.payer ?? null,
          claim?.caps.client ?? null,
        ],
        'channel_lease_take_for',
      );
      const r = rows[0];
      if (r.address) return { address: r.address };
      if (!r.free || !claim) return { address: null, full: 'pool' };
      if (r.client_n >= claim.caps.client) return { address: null, full: 'client' };
      if (r.seller_n >= claim.caps.seller) return { address: null, full: 'seller' };
      return { address: null, full: 'payer' };
    },

    async renew(network, address, token, ttlSeconds) {
      await pgQuery(
        db,
        `UPDATE channel_leases SET leased_until = now() + make_interval(secs => $4::double precision) WHERE ` +
          `network = $1 AND address = $2 AND holder = $3`,
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
