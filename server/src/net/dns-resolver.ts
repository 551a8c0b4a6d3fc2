import dns from 'node:dns';
import { DomainCheckError, errorCode } from '../domain/sellers/domain-verification/errors';

export type ResolveTxt = (name: string) => Promise<string[][]>;

export interface DnsTxtResolverOptions {
  /** Total budget for the query, all tries included. Default 5000 ms. */
  timeoutMs?: number;
  /** Resolver addresses ('1.1.1.1', '[::1]:5353'); default the system's. */
  servers?: string[];
}

const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * TXT lookup through node:dns (a c-ares Resolver of its own, so servers and timeouts do not leak into the process).
 * "No such name" and "no TXT data" mean no records ([]); a timeout throws `timeout`, anything else `dns_failure`.
 * Each record comes back as its chunks; callers join them.
 */
export function createDnsTxtResolver(options: DnsTxtResolverOptions = {}): ResolveTxt {
  const timeoutMs = options.timeoutMs ?? 5000;
  return async function resolveTxt(name: string): Promise<string[][]> {
    const resolver = new dns.promises.Resolver({ timeout: Math.max(1, Math.floor(timeoutMs / 2)), tries: 2 });
    if (options.servers) resolver.setServers(options.servers);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        resolver.cancel();
        reject(new DomainCheckError('timeout', `The TXT lookup for ${name} took longer than ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([resolver.resolveTxt(name), deadline]);
    } catch (err) {
      if (err instanceof DomainCheckError) throw err;
      const code = errorCode(err);
      if (NO_RECORDS.has(code)) return [];
      if (code === 'ETIMEOUT' || code === 'ECANCELLED') {
        throw new DomainCheckError('timeout', `The TXT lookup for ${name} took longer than ${timeoutMs} ms`);
      }
      throw new DomainCheckError('dns_failure', `The TXT lookup for ${name} failed (${code})`);
    } finally {
      clearTimeout(timer);
    }
  };
}
