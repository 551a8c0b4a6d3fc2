import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { isPublicAddress } from '../domain/sellers/domain-verification/address-policy';
import { DomainCheckError, errorCode } from '../domain/sellers/domain-verification/errors';

export interface FetchTextResult {
  status: number;
  /** The UTF-8 body for a 200; empty for any other status (it is never read). */
  body: string;
  /** Response headers (lower-case names), for callers that read a non-200 answer (the conformance 402 probe). */
  headers?: Record<string, string>;
}

/** A POST instead of the GET (the liveness worker's MCP probes: a JSON-RPC body, never a payment). */
export interface FetchInit {
  method: 'POST';
  body: string;
  contentType: string;
  accept?: string;
}

export type FetchText = (url: string, init?: FetchInit) => Promise<FetchTextResult>;

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface SafeFetcherOptions {
  /** Total budget for DNS lookup, connect, TLS, headers and body. Default 5000 ms. */
  timeoutMs?: number;
  /** Largest body accepted; the transfer is aborted beyond it. Default 64 KiB. */
  maxBytes?: number;
  /** Tests only: allow http:// URLs. */
  allowInsecureForTests?: boolean;
  /** Tests only: allow loopback/private addresses (to reach a local test server). */
  allowPrivateAddressesForTests?: boolean;
  /** Statuses whose body is read (default only 200). The conformance runner reads 402 answers. */
  readBodyOfStatuses?: number[];
  /** Host name resolution; default dns.lookup with all addresses. Injectable so tests can simulate DNS answers. */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>;
}

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_BYTES = 64 * 1024;
const USER_AGENT = 'paid-api-marketplace-domain-verification/1';

const defaultLookup = async (hostname: string): Promise<ResolvedAddress[]> => {
  const answers = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/**
 * An SSRF-hardened GET for seller-controlled URLs.
 *
 * - https only (http only with allowInsecureForTests); no userinfo in the URL.
 * - The host is resolved once; if ANY of its addresses is not public (see address-policy.ts) the fetch is refused
 *   before a connection is made. The socket then connects to the vetted address through a fixed `lookup`, so a
 *   second DNS answer cannot swap in another address (DNS rebinding). TLS still verifies the certificate for the
 *   host name (SNI and the Host header keep the name).
 * - Redirects are never followed: a 3xx comes back as its status and the caller fails the check with `redirect`.
 *   Sellers must serve the file at the exact URL (SEP-1 asks the same of stellar.toml).
 * - One total timeout; bodies above maxBytes abort the transfer; only a 200's body is read. No keep-alive agent.
 *
 * Failures throw DomainCheckError; messages name the host and the reason, never body content.
 */
export function createSafeFetcher(options: SafeFetcherOptions = {}): FetchText {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const allowInsecure = options.allowInsecureForTests === true;
  const allowPrivate = options.allowPrivateAddressesForTests === true;
  const lookup = options.lookup ?? defaultLookup;

  return async function fetchText(rawUrl: string, init?: FetchInit): Promise<FetchTextResult> {
    const url = parseUrl(rawUrl, allowInsecure);
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;

    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const vetted = await withAbort(resolveAndVet(host, lookup, allowPrivate), controller.signal, host, timeoutMs);
      return await get(
        url,
        host,
        vetted,
        controller.signal,
        maxBytes,
        timeoutMs,
        options.readBodyOfStatuses ?? [200],
        options.readBodyOfStatuses !== undefined,
        init,
      );
    } finally {
      clearTimeout(timer);
    }
  };
}

function parseUrl(rawUrl: string, allowInsecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new DomainCheckError('insecure_url', 'The URL is not valid');
  }
  const protocolOk = url.protocol === 'https:' || (allowInsecure && url.protocol === 'http:');
  if (!protocolOk)
    throw new DomainCheckError('insecure_url', `Only https URLs are fetched (got ${url.protocol.slice(0, 10)})`);
  if (url.username !== '' || url.password !== '') {
    throw new DomainCheckError('insecure_url', 'URLs with credentials are not fetched');
  }
  return url;
}

async function resolveAndVet(
  host: string,
  lookup: (hostname: string) => Promise<ResolvedAddress[]>,
  allowPrivate: boolean,
): Promise<ResolvedAddress> {
  let addresses: ResolvedAddress[];
  const literal = net.isIP(host);
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await lookup(host);
    } catch (err) {
      throw new DomainCheckError('dns_failure', `${host} did not resolve (${errorCode(err)})`);
    }
    if (addresses.length === 0) throw new DomainCheckError('dns_failure', `${host} has no addresses`);
  }
  if (!allowPrivate) {
    for (const { address } of addresses) {
      if (!isPublicAddress(address)) {
        throw new DomainCheckError('private_address', `${host} resolves to a non-public address; it is not fetched`);
      }
    }
  }
  return addresses[0];
}

function get(
  url: URL,
  host: string,
  vetted: ResolvedAddress,
  signal: AbortSignal,
  maxBytes: number,
  timeoutMs: number,
  readStatuses: number[] = [200],
  withHeaders = false,
  init?: FetchInit,
): Promise<FetchTextResult> {
  const client = url.protocol === 'https:' ? https : http;
  // Always answer with the vetted address, in whichever shape net.connect asks for (Node 20 asks for `all` when
  // autoSelectFamily is on).
  const pinnedLookup: LookupFunction = (_hostname, opts, callback) => {
    if (opts.all) (callback as (e: null, a: dns.LookupAddress[]) => void)(null, [vetted]);
    else callback(null, vetted.address, vetted.family);
  };

  return new Promise<FetchTextResult>((resolve, reject) => {
    let settled = false;
    const fail = (error: DomainCheckError): void => {
      if (settled) return;
      settled = true;
      req.destroy();
      reject(error);
    };

    const req = client.request(
      {
        protocol: url.protocol,
        hostname: host,
        port: url.port === '' ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        method: init ? 'POST' : 'GET',
        headers: init
          ? {
              'user-agent': USER_AGENT,
              accept: init.accept ?? 'application/json',
              'accept-encoding': 'identity',
              'content-type': init.contentType,
              'content-length': String(Buffer.byteLength(init.body)),
            }
          : {
              'user-agent': USER_AGENT,
              accept: 'text/plain, application/toml, */*;q=0.1',
              'accept-encoding': 'identity',
            },
        lookup: pinnedLookup,
        agent: false,
        signal,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (!readStatuses.includes(status)) {
          settled = true;
          res.destroy();
          req.destroy();
          resolve({ status, body: '' });
          return;
        }
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) {
          fail(new DomainCheckError('too_large', `${host} sent more than ${maxBytes} bytes`));
          return;
        }
        const chunks: Buffer[] = [];
        let received = 0;
        res.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > maxBytes) {
            fail(new DomainCheckError('too_large', `${host} sent more than ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          settled = true;
          const body = new TextDecoder('utf-8').decode(Buffer.concat(chunks)); // strips a BOM, replaces bad bytes
          // Headers only for callers that asked to read other statuses (the conformance 402 probe); default unchanged.
          if (!withHeaders) resolve({ status, body });
          else
            resolve({
              status,
              body,
              headers: Object.fromEntries(
                Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')]),
              ),
            });
        });
        res.on('error', (err) => fail(transportError(err, host, signal, timeoutMs)));
        res.on('close', () => fail(transportError(new Error('closed'), host, signal, timeoutMs)));
      },
    );
    req.on('error', (err) => fail(transportError(err, host, signal, timeoutMs)));
    req.end(init ? init.body : undefined);
  });
}

function transportError(err: unknown, host: string, signal: AbortSignal, timeoutMs: number): DomainCheckError {
  if (signal.aborted) return new DomainCheckError('timeout', `${host} did not answer within ${timeoutMs} ms`);
  return new DomainCheckError('connection_failed', `Could not fetch from ${host} (${errorCode(err)})`);
}

/** Races a promise that cannot itself be cancelled (dns.lookup) against the overall deadline. */
function withAbort<T>(promise: Promise<T>, signal: AbortSignal, host: string, timeoutMs: number): Promise<T> {
  if (signal.aborted)
    return Promise.reject(new DomainCheckError('timeout', `${host} did not answer within ${timeoutMs} ms`));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void =>
      reject(new DomainCheckError('timeout', `${host} did not resolve within ${timeoutMs} ms`));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
