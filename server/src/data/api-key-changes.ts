import { Client } from 'pg';
import type { Sequelize } from 'sequelize';
import { API_KEY_CHANNEL } from './seller-repository';
import type { ApiKeyCache } from '../http/authenticate';
import type { Logger } from '../logger';

const RECONNECT_MS = 1_000;

/**
 * Listens on API_KEY_CHANNEL (PostgreSQL LISTEN on one dedicated connection, outside the pool) and drops every
 * revoked key from this process's ApiKeyCache, so a revocation made by any process takes effect here as soon as
 * it commits. The cache serves only while the LISTEN is in place: it starts suspended, resumes once listening, and
 * is suspended again when the connection is lost (every request then looks its key up) until a reconnect, tried
 * every RECONNECT_MS.
 */
export async function listenForApiKeyChanges(db: Sequelize, cache: ApiKeyCache, logger: Logger): Promise<{ close(): Promise<void>; listening(): boolean }> {
  const cfg = db.config;
  let client: Client | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;

  async function connect(): Promise<void> {
    const c = new Client({ host: cfg.host, port: Number(cfg.port), user: cfg.username, password: cfg.password ?? undefined, database: cfg.database, application_name: 'paid-api-marketplace-key-changes' });
    c.on('notification', (msg) => {
      if (msg.channel === API_KEY_CHANNEL && msg.payload) cache.forget(msg.payload);
    });
    c.on('error', (err) => {
      logger.warn('API key change listener lost its connection; cache suspended', { error: err.message });
      lost(c);
    });
    c.on('end', () => lost(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${API_KEY_CHANNEL}`);
    } catch (err) {
      logger.warn('API key change listener could not connect; cache suspended', { error: (err as Error).message });
      void c.end().catch(() => undefined);
      schedule();
      return;
    }
    if (closed) return void (await c.end().catch(() => undefined));
    client = c;
    cache.resume();
  }

  function lost(c: Client): void {
    if (client !== c) return;
    client = null;
    cache.suspend();
    void c.end().catch(() => undefined);
    schedule();
  }

  function schedule(): void {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = null;
      void connect();
    }, RECONNECT_MS);
    timer.unref();
  }

  cache.suspend();
  await connect();
  return {
    listening: () => client !== null,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      cache.suspend();
      await c?.end().catch(() => undefined);
    },
  };
}
