import request from 'supertest';
import type { Express } from 'express';
import type { Sequelize } from 'sequelize';
import { bearer, resourceInput, type SignedUpSeller } from '../support/fixtures';

/** The resource part of a catalog/validate body for a seller (the fixture's resource input without sellerId). */
export function draft(seller: SignedUpSeller, overrides: Record<string, unknown> = {}) {
  const { sellerId: _s, ...resource } = resourceInput(seller, overrides);
  return resource;
}

export function catalog(app: Express, key: string | null, body: Record<string, unknown>) {
  const req = request(app).post('/v1/discovery/catalog');
  if (key) req.set(bearer(key));
  return req.send(body);
}

export function validate(app: Express, key: string | null, body: Record<string, unknown>) {
  const req = request(app).post('/v1/discovery/validate');
  if (key) req.set(bearer(key));
  return req.send(body);
}

/** Waits until the indexing worker has caught up with every catalog event. */
export async function waitIndexed(db: Sequelize, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [[row]] = (await db.query('SELECT count(*)::int AS n FROM catalog_events WHERE indexed_at IS NULL')) as [
      Array<{ n: number }>,
      unknown,
    ];
    if (row.n === 0) return;
    if (Date.now() > until) throw new Error(`index still behind by ${row.n} catalog events`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A description long enough to score full marks on the description-length part of metadata quality. */
export const LONG =
  'Reliable endpoint with stable latency, clear errors and documented limits, maintained by a responsive team ' +
  'for production use.';
