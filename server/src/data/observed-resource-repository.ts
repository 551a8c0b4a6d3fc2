import type { Sequelize } from 'sequelize';
import { newId } from '../domain/ids';
import { pgQuery } from './pg-query';
import type { ObservedResource, ObservedResourceRepository } from '../domain/discovery/bazaar';

/** Observed resources of the Bazaar (migration 0022): upserted by URL (+ MCP tool) and network, one payment row per transaction. */
export function createObservedResourceRepository(db: Sequelize): ObservedResourceRepository {
  return {
    async walletSeller(address) {
      const { rows } = await pgQuery<{ id: string; domain: string; other: boolean }>(
        db,
        `SELECT s.id, s.domain,
                EXISTS (SELECT 1 FROM sellers x WHERE x.domain = s.domain AND x.id <> s.id AND x.domain_verified_at IS NOT NULL) AS other
           FROM sellers s WHERE s.wallet_address = $1 LIMIT 1`,
        [address],
      );
      return rows[0] ? { id: rows[0].id, domain: rows[0].domain, domainVerifiedByOther: rows[0].other } : null;
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
                u.calls, u.payers, count(*) OVER () AS total
           FROM observed_resources o
           LEFT JOIN LATERAL (SELECT count(*)::int AS calls, count(DISTINCT p.payer)::int AS payers FROM observed_payments p
                               WHERE p.observed_resource_id = o.id AND p.paid_at > now() - interval '30 days') u ON true
          WHERE o.last_payment_at > now() - interval '30 days' AND ($1::text IS NULL OR o.type = $1)
          ORDER BY u.payers DESC, u.calls DESC, o.last_payment_at DESC, o.id
          OFFSET $2 LIMIT $3`,
        [type ?? null, offset, limit],
      );
      let total = Number(rows[0]?.total ?? 0);
      if (rows.length === 0) {
        const { rows: c } = await pgQuery<{ n: number }>(db, `SELECT count(*)::int AS n FROM observed_resources WHERE last_payment_at > now() - interval '30 days' AND ($1::text IS NULL OR type = $1)`, [type ?? null]);
        total = c[0].n;
      }
      const items: ObservedResource[] = rows.map((r) => ({
        id: r.id as string, network: r.network as string, resourceUrl: r.resourceUrl as string, toolName: r.toolName as string, type: r.type as 'http' | 'mcp',
        description: r.description as string, mimeType: (r.mimeType as string | null) ?? null, payTo: r.payTo as string, asset: r.asset as string,
        amount: r.amount as string, bazaar: r.bazaar as Record<string, unknown>, sellerId: (r.sellerId as string | null) ?? null,
        lastPaymentAt: new Date(r.lastPaymentAt as string), settledCalls30d: Number(r.calls ?? 0), uniquePayers30d: Number(r.payers ?? 0),
      }));
      return { items, total };
    },
  };
}
