/**
 * Fail loudly at start (issue #22): a taken port, an unreachable DATABASE_URL or an unreachable configured RPC
 * each stop `npm start` with ONE clear line on stderr and a non-zero exit, instead of a process that logs
 * "listening" and serves nothing, or waits forever for a database. No connection string or RPC URL beyond its
 * scheme and host is ever printed (they can carry passwords or a provider's API key).
 */
import net from 'node:net';
import pg from 'pg';
import { rpcOrigin } from './domain/network-registry';
import { JsonRpcError } from './ledger/json-rpc-client';
import { sorobanRpc } from './ledger/soroban-rpc';

/** Exit codes: 2 = bad configuration (config.ts), 3 = something the configuration names cannot be used. */
export const STARTUP_FAILURE_EXIT_CODE = 3;

export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** Only the host (and port) of a connection string: never the user, password or database name. */
function databaseHost(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}`;
  } catch {
    return 'an unparseable URL';
  }
}

/** DATABASE_URL answers `SELECT 1` within the deadline, or a StartupError names its host and the cause's code. */
export async function checkDatabase(databaseUrl: string, timeoutMs = 8_000): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new StartupError(
      `cannot start: the database in DATABASE_URL (${databaseHost(databaseUrl)}) is unreachable ` +
        `(${code ?? 'no answer'}); start PostgreSQL or unset DATABASE_URL to use the embedded one`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Every configured RPC answers getHealth within the deadline (two tries), or a StartupError names the variable. */
export async function checkRpcs(rpcs: Array<{ variable: string; rpcUrl: string }>, timeoutMs = 5_000): Promise<void> {
  await Promise.all(
    rpcs.map(async ({ variable, rpcUrl }) => {
      for (let attempt = 1; ; attempt++) {
        try {
          await sorobanRpc(rpcUrl, timeoutMs).health();
          return;
        } catch (err) {
          if (attempt >= 2) {
            const cause =
              err instanceof JsonRpcError && err.kind === 'timeout'
                ? `no answer in ${timeoutMs / 1000} s`
                : 'connection failed';
            throw new StartupError(
              `cannot start: the Soroban RPC in ${variable} (${rpcOrigin(rpcUrl) ?? 'unparseable URL'}) is ` +
                `unreachable (${cause} to getHealth); fix or unset ${variable}`,
            );
          }
          await new Promise((r) => setTimeout(r, 1_000));
        }
      }
    }),
  );
}

/** The port is free on the host, or a StartupError names the variable to change. */
export async function checkPortFree(port: number, host: string, variable = 'PORT'): Promise<void> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, port, host, variable)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** The one line for a listen failure (EADDRINUSE, EACCES, EADDRNOTAVAIL). */
export function listenError(err: NodeJS.ErrnoException, port: number, host: string, variable = 'PORT'): StartupError {
  if (err.code === 'EADDRINUSE')
    return new StartupError(
      `cannot start: port ${port} on ${host} is already in use by another program; stop it or set ${variable} ` +
        `to a free port`,
    );
  if (err.code === 'EACCES')
    return new StartupError(
      `cannot start: no permission to listen on port ${port} on ${host}; set ${variable} to a port above 1023`,
    );
  return new StartupError(
    `cannot start: cannot listen on ${host}:${port} (${err.code ?? err.message}); check HOST and PORT`,
  );
}
