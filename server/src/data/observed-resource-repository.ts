import type { Sequelize } from 'sequelize';
import { newId } from '../domain/ids';
import { pgQuery } from './pg-query';
import type { BazaarFilters, ObservedResource, ObservedResourceRepository } from '../domain/discovery/bazaar';

/**
 * Served only while the host is still proven by the observed resource's seller (issue #29): rows learned before the
 * rule, or on a host another seller proved since, leave the list (purged with the others after 30 days).
 */
const PROVEN_SQL = `o.seller_id IS NOT NULL AND host_owner(url_host(o.resource_url)) = o.seller_id`;

/**
 * The rows the Bazaar serves, with its filters (positional parameters appended to `values`): recent, proven (or,
 * while LOCAL_DEV_DOMAINS is on, learned on a loopback host), and matching every filter given. Observed resources
 * are all paid with `exact` (the caller answers nothing for another scheme).
 */
function servedWhere(filters: BazaarFilters, localDev: boolean, values: unknown[]): string {
  const where = [
    `o.last_payment_at > now() - interval '30 days'`,
    localDev ? `(o.local_dev OR (${PROVEN_SQL}))` : `NOT o.local_dev AND ${PROVEN_SQL}`,
  ];
  const add = (sql: (n: number) => string, v: unknown) => (values.push(v), where.push(sql(values.length)));
  if (filters.type) add((n) => `o.type = $${n}`, filters.type);
  if (filters.payTo) add((n) => `o.pay_to = $${n}`, filters.payTo);
  if (filters.network) add((n) => `o.network = $${n}`, filters.network);
  if (filters.extension) add((n) => `$${n} = ANY (o.extension_names)`, filters.extension);
  if (filters.scheme !== undefined && filters.scheme !== 'exact') where.push('false');
  return where.join(' AND ');
}

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

/** Observed resources of the Bazaar (migration 0022): upserted by URL (+ MCP tool) and network, one payment row per
 * transaction. */
export function createObservedResourceRepository(db: Sequelize): ObservedResourceRepository {
  return {
    async walletSeller(address, host) {
      const { rows } = await pgQuery<{ id: string; domain: string; verified: boolean; hostOwner: string | null }>(
        db,
        `SELECT s.id, s.domain, s.domain_verified_at IS NOT NULL AS verified, host_owner(NULLIF(rtrim(lower($2),
          '.'), '')) AS "hostOwner"
           FROM sellers s WHERE s.wallet_address = $1 LIMIT 1`,
        [address, host],
      );
      return rows[0]
        ? {
            id: rows[0].id,
            domain: rows[0].domain,
            domainVerified: rows[0].verified,
            hostOwner: rows[0].hostOwner ?? null,
          }
        : null;
    },

    async isCataloged(urls) {
      const { rows } = await pgQuery(
        db,
        `SELECT 1 FROM resources WHERE status = 'active' AND url = ANY(CAST($1 AS text[])) LIMIT 1`,
        [urls],
      );
      return rows.length > 0;
    },

    async record(w) {
      const { rows } = await pgQuery<{ id: string }>(
        db,
        `WITH o AS (
           INSERT INTO observed_resources (id, network, resource_url, tool_name, type, route_template,
             description, mime_type, pay_to, asset,
                                           amount, bazaar, seller_id,
                                             last_payment_at, service_name, tags, icon_url, extension_names,
                                             local_dev)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, CAST($12 AS jsonb), $13, now(), $16,
             CAST($17 AS text[]), $18, CAST($19 AS text[]), $20)
           ON CONFLICT (network, resource_url, tool_name) DO UPDATE SET
             type = EXCLUDED.type, route_template = EXCLUDED.route_template, description = EXCLUDED.description,
             mime_type = EXCLUDED.mime_type, pay_to = EXCLUDED.pay_to, asset = EXCLUDED.asset, amount = EXCLUDED.amount,
             bazaar = EXCLUDED.bazaar, seller_id = EXCLUDED.seller_id, last_payment_at = now(), updated_at = now(),
             service_name = EXCLUDED.service_name, tags = EXCLUDED.tags, icon_url = EXCLUDED.icon_url,
             extension_names = EXCLUDED.extension_names, local_dev = EXCLUDED.local_dev
           RETURNING id),
         p AS (
           INSERT INTO observed_payments (network, transaction, observed_resource_id, payer, amount)
           SELECT $2, $14, o.id, $15, $11 FROM o
           ON CONFLICT (network, transaction) DO NOTHING)
         SELECT id FROM o`,
        [
          newId('observed'),
          w.network,
          w.resourceUrl,
          w.toolName,
          w.type,
          w.routeTemplate,
          w.description,
          w.mimeType,
          w.payTo,
          w.asset,
          w.amount,
          JSON.stringify(w.bazaar),
          w.sellerId,
          w.transaction,
          w.payer,
          w.serviceName,
          w.tags,
          w.iconUrl,
          w.extensionNames,
          w.localDev,
        ],
      );
      return rows[0].id;
    },

    async listRecent(filters, offset, limit, opts) {
      const values: unknown[] = [];
      const where = servedWhere(filters, opts.localDev, values);
      const { rows } = await pgQuery<Record<string, unknown>>(
        db,
        `SELECT o.id, o.network, o.resource_url AS "resourceUrl", o.tool_name AS "toolName", o.type,
          o.description, o.mime_type AS "mimeType",
                o.pay_to AS "payTo", o.asset, o.amount, o.bazaar, o.seller_id AS "sellerId",
                  o.last_payment_at AS "lastPaymentAt",
                o.service_name AS "serviceName", o.tags, o.icon_url AS "iconUrl", o.local_dev AS "localDev",
                u.calls, w.payers, w.weighted, count(*) OVER () AS total
           FROM observed_resources o
           LEFT JOIN LATERAL (SELECT count(*)::int AS calls FROM observed_payments p
                               WHERE p.observed_resource_id = o.id AND p.paid_at > now() - interval '30 days') u ON true
           LEFT JOIN LATERAL (${WEIGHTED_PAYERS_SQL}) w ON true
          WHERE ${where}
          ORDER BY w.weighted DESC, u.calls DESC, o.last_payment_at DESC, o.id
          OFFSET $${values.length + 1} LIMIT $${values.length + 2}`,
        [...values, offset, limit],
      );
      let total = Number(rows[0]?.total ?? 0);
      if (rows.length === 0) {
        const { rows: c } = await pgQuery<{ n: number }>(
          db,
          `SELECT count(*)::int AS n FROM observed_resources o WHERE ${where}`,
          values,
        );
        total = c[0].n;
      }
      const items: ObservedResource[] = rows.map((r) => ({
        id: r.id as string,
        network: r.network as string,
        resourceUrl: r.resourceUrl as string,
        toolName: r.toolName as string,
        type: r.type as 'http' | 'mcp',
        description: r.description as string,
        mimeType: (r.mimeType as string | null) ?? null,
        payTo: r.payTo as string,
        asset: r.asset as string,
        amount: r.amount as string,
        bazaar: r.bazaar as Record<string, unknown>,
        sellerId: (r.sellerId as string | null) ?? null,
        lastPaymentAt: new Date(r.lastPaymentAt as string),
        settledCalls30d: Number(r.calls ?? 0),
        uniquePayers30d: Number(r.payers ?? 0),
        weightedPayers30d: Number(r.weighted ?? 0),
        serviceName: (r.serviceName as string | null) ?? null,
        tags: (r.tags as string[] | null) ?? [],
        iconUrl: (r.iconUrl as string | null) ?? null,
        localDev: Boolean(r.localDev),
      }));
      return { items, total };
    },
  };
}
