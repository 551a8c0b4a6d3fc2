import { Client } from 'pg';
import { API_KEY_CHANNEL } from './seller-repository';
import type { Logger } from '../logger';

const RECONNECT_MS = 1_000;

/**
 * Listens on API_KEY_CHANNEL (PostgreSQL LISTEN on one dedicated connection, outside the pool) and drops every
 * revoked key from this process's ApiKeyCache, so a revocation made by any process takes effect here as soon as
 * it commits. The cache serves only while the LISTEN is in place: it starts suspended, resumes once listening, and
 * is suspended again when the connection is lost (every request then looks its key up) until a reconnect, tried
 * every RECONNECT_MS.
 */
/** What a key cache offers the listener (http/authenticate.ts's ApiKeyCache). */
export interface ApiKeyCacheControl {
  /** Drops a revoked key. */
  forget(key: string): void;
  /** Stops serving from the cache (not listening: every request looks its key up). */
  suspend(): void;
  /** Serves from the cache again (listening). */
  resume(): void;
}

export async function listenForApiKeyChanges(
  databaseUrl: string,
  cache: ApiKeyCacheControl,
  logger: Logger,
): Promise<{ close(): Promise<void>; listening(): boolean }> {
  let client: Client | null = null;
  let closed = false;
  let timer: NodeJS.Timeout | null = null;
  /** Logged once per outage (not at every retry); the error text is not logged (it can name the host). */
  let down = false;
  const warnOnce = (message: string) => {
    if (!down) logger.warn(message);
    down = true;
  };

  async function connect(): Promise<void> {
    const c = new Client({ connectionString: databaseUrl, application_name: 'paid-api-marketplace-key-changes' });
    c.on('notification', (msg) => {
      if (msg.channel === API_KEY_CHANNEL && msg.payload) cache.forget(msg.payload);
    });
    c.on('error', () => {
      warnOnce('API key change listener lost its connection; key cache suspended until it reconnects');
      lost(c);
    });
    c.on('end', () => lost(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${API_KEY_CHANNEL}`);
    } catch {
      warnOnce('API key change listener could not connect; key cache suspended until it does');
      void c.end().catch(() => undefined);
      schedule();
      return;
    }
    if (closed) return void (await c.end().catch(() => undefined));
    client = c;
    cache.resume();
    if (down) logger.info('API key change listener connected again; key cache resumed');
    down = false;
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
