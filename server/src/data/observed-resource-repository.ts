import type { Sequelize } from 'sequelize';
import { newId } from '../domain/ids';
import { pgQuery } from './pg-query';
import type { ObservedResource, ObservedResourceRepository } from '../domain/discovery/bazaar';

/**
 * Served only while the host is still proven by the observed resource's seller (issue #29): rows learned before the
 * rule, or on a host another seller proved since, leave the list (purged with the others after 30 days).
 */
const PROVEN_SQL = `o.seller_id IS NOT NULL AND host_owner(url_host(o.resource_url)) = o.seller_id`;

/**
 * Usage of an observed resource, as the search ranking's (data/search-index-repository.ts): distinct payers over 30
 * days whose payment paid at least the resource's announced price (atomic units), each weighted by what it paid at
 * that price over 0.01 of the asset (100000 atomic units at 7 decimals), at most 1.
 */
const atomic = (col: string) => `(CASE WHEN ${col} ~ '^[0-9]{1,30}$' THEN CAST(${col} AS numeric) END)`;
const WEIGHTED_PAYERS_SQL = `
  SELECT count(*)::int AS payers, COALESCE(sum(LEAST(1.0, q.at_price / 100000.0)), 0)::float8 AS weighted
    FROM (SELECT p.payer, count(*) * ${atomic('o.amount')} AS at_price FROM observed_payments p
           WHERE p.observed_resource_id = o.id AND p.paid_at > now() - interval '30 days' AND p.payer <> o.pay_to
             AND ${atomic('p.amount')} >= ${atomic('o.amount')}
           GROUP BY p.payer) q`;

/** Observed resources of the Bazaar (migration 0022): upserted by URL (+ MCP tool) and network, one payment row per transaction. */
export function createObservedResourceRepository(db: Sequelize): ObservedResourceRepository {
  return {
    async walletSeller(address, host) {
      const { rows } = await pgQuery<{ id: string; domain: string; verified: boolean; hostOwner: string | null }>(
        db,
        `SELECT s.id, s.domain, s.domain_verified_at IS NOT NULL AS verified, host_owner(NULLIF(rtrim(lower($2), '.'), '')) AS "hostOwner"
           FROM sellers s WHERE s.wallet_address = $1 LIMIT 1`,
        [address, host],
      );
      return rows[0] ? { id: rows[0].id, domain: rows[0].domain, domainVerified: rows[0].verified, hostOwner: rows[0].hostOwner ?? null } : null;
    },

    async isCataloged(urls) {
      const { rows } = await pgQuery(db, `SELECT 1 FROM resources WHERE status = 'active' AND url = ANY(CAST($1 AS text[])) LIMIT 1`, [urls]);
      return rows.length > 0;
    },

    async record(w) {
      const { rows } = await pgQuery<{ id: string }>(
        db,
        `WITH o AS (
           INSERT INTO observed_resources (id, network, resource_url, tool_name, type, route_template, description, mime_type, pay_to, asset,
                                           amount, bazaar, seller_id, last_payment_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, CAST($12 AS jsonb), $13, now())
           ON CONFLICT (network, resource_url, tool_name) DO UPDATE SET
             type = EXCLUDED.type, route_template = EXCLUDED.route_template, description = EXCLUDED.description,
             mime_type = EXCLUDED.mime_type, pay_to = EXCLUDED.pay_to, asset = EXCLUDED.asset, amount = EXCLUDED.amount,
             bazaar = EXCLUDED.bazaar, seller_id = EXCLUDED.seller_id, last_payment_at = now(), updated_at = now()
           RETURNING id),
         p AS (
           INSERT INTO observed_payments (network, transaction, observed_resource_id, payer, amount)
           SELECT $2, $14, o.id, $15, $11 FROM o
           ON CONFLICT (network, transaction) DO NOTHING)
         SELECT id FROM o`,
        [newId('observed'), w.network, w.resourceUrl, w.toolName, w.type, w.routeTemplate, w.description, w.mimeType, w.payTo, w.asset, w.amount, JSON.stringify(w.bazaar), w.sellerId, w.transaction, w.payer],
      );
      return rows[0].id;
    },

    async listRecent(type, offset, limit) {
      const { rows } = await pgQuery<Record<string, unknown>>(
        db,
        `SELECT o.id, o.network, o.resource_url AS "resourceUrl", o.tool_name AS "toolName", o.type, o.description, o.mime_type AS "mimeType",
                o.pay_to AS "payTo", o.asset, o.amount, o.bazaar, o.seller_id AS "sellerId", o.last_payment_at AS "lastPaymentAt",
                u.calls, w.payers, w.weighted, count(*) OVER () AS total
           FROM observed_resources o
           LEFT JOIN LATERAL (SELECT count(*)::int AS calls FROM observed_payments p
                               WHERE p.observed_resource_id = o.id AND p.paid_at > now() - interval '30 days') u ON true
           LEFT JOIN LATERAL (${WEIGHTED_PAYERS_SQL}) w ON true
          WHERE o.last_payment_at > now() - interval '30 days' AND ($1::text IS NULL OR o.type = $1) AND ${PROVEN_SQL}
          ORDER BY w.weighted DESC, u.calls DESC, o.last_payment_at DESC, o.id
          OFFSET $2 LIMIT $3`,
        [type ?? null, offset, limit],
      );
      let total = Number(rows[0]?.total ?? 0);
      if (rows.length === 0) {
        const { rows: c } = await pgQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM observed_resources o WHERE o.last_payment_at > now() - interval '30 days' AND ($1::text IS NULL OR o.type = $1) AND ${PROVEN_SQL}`, [type ?? null]);
        total = c[0].n;
      }
      const items: ObservedResource[] = rows.map((r) => ({
        id: r.id as string, network: r.network as string, resourceUrl: r.resourceUrl as string, toolName: r.toolName as string, type: r.type as 'http' | 'mcp',
        description: r.description as string, mimeType: (r.mimeType as string | null) ?? null, payTo: r.payTo as string, asset: r.asset as string,
        amount: r.amount as string, bazaar: r.bazaar as Record<string, unknown>, sellerId: (r.sellerId as string | null) ?? null,
        lastPaymentAt: new Date(r.lastPaymentAt as string), settledCalls30d: Number(r.calls ?? 0), uniquePayers30d: Number(r.payers ?? 0), weightedPayers30d: Number(r.weighted ?? 0),
      }));
      return { items, total };
    },
  };
}
