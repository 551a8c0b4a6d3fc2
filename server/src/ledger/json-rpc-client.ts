import http from 'node:http';
import https from 'node:https';
import { DEFAULT_RPC_TIMEOUT_MS } from '../domain/defaults';

/**
 * The ONE JSON-RPC client of the service for Soroban RPC (issue #23 item 5): the ledger port, the channel pool,
 * the wallet-state reader, the network-health probe, simulator detection and the start checks all send their
 * calls here (ledger/soroban-rpc.ts gives them typed methods). Without the Stellar SDK's axios client (issue #14:
 * axios was ~14 % of a verify's CPU): one POST per call over a keep-alive agent (node:http/https) shared by every
 * caller of one RPC URL, a deadline per call (the request and its socket are destroyed when it passes), an answer
 * bounded in size, and every failure one error type, JsonRpcError, whose message names the method and never the
 * URL (a provider's API key can sit in its path or query).
 *
 * Idle sockets are closed after IDLE_SOCKET_MS, below the 5 s keep-alive timeout of Node servers (and of Soroban
 * RPC's proxies), and a READ whose reused socket was closed by the server before any answer (ECONNRESET / socket
 * hang up: the keep-alive race) is sent once more on a new socket within the same deadline. sendTransaction is
 * never sent twice by this client (a submission's outcome is the confirmation worker's business). No redirects.
 * HTTPS trusts what https.globalAgent trusts (the local network's certificate, see local-network/tls-certificate.ts).
 */
/** Idle keep-alive sockets are closed after this long (Node's own global agent uses 5 s). */
const IDLE_SOCKET_MS = 4000;
/**
 * Sockets per RPC URL. Every caller of the process shares them (settles, verifies, workers, the health probe), so
 * the bound is well above one process's concurrent calls: a call queued for a socket spends its own deadline.
 */
const MAX_SOCKETS = 256;
/** An answer larger than this is refused (a getLedgerEntries of 200 contract entries is well below it). */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;
/** Methods with an effect: never sent twice. */
const WRITES = new Set(['sendTransaction']);

/** What failed: no answer in time, an HTTP status other than 200, a JSON-RPC error object, the connection, or an
 * unreadable answer. */
export type JsonRpcFailure = 'timeout' | 'http' | 'rpc' | 'transport' | 'invalid';

export class JsonRpcError extends Error {
  override readonly name = 'JsonRpcError';
  constructor(
    readonly kind: JsonRpcFailure,
    readonly method: string,
    message: string,
    /** The JSON-RPC error code, when the RPC answered one. */
    readonly rpcCode?: number,
  ) {
    super(`${method}: ${message}`);
  }
}

/** The server closed a kept-alive socket as it was reused, before answering: nothing reached it. */
class StaleSocketError extends Error {}

export interface CallOptions {
  /** This call's deadline, ms (default: the client's). */
  timeoutMs?: number;
}

export class JsonRpcClient {
  /** null when the configured URL is not an http(s) URL: every call then fails with JsonRpcError 'invalid'. */
  private readonly url: URL | null;
  private readonly agent: http.Agent;
  private nextId = 1;

  constructor(
    url: string,
    private readonly timeoutMs = DEFAULT_RPC_TIMEOUT_MS,
  ) {
    const parsed = URL.canParse(url) ? new URL(url) : null;
    this.url = parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:') ? parsed : null;
    const options = { keepAlive: true, maxSockets: MAX_SOCKETS, timeout: IDLE_SOCKET_MS };
    this.agent = this.url?.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
  }

  /** One call; a read may be sent a second time on a new socket (see above), within the same deadline. */
  async call<T>(method: string, params?: unknown, opts: CallOptions = {}): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    try {
      return await this.send<T>(method, params, timeoutMs);
    } catch (err) {
      const left = deadline - Date.now();
      if (!(err instanceof StaleSocketError)) throw err;
      if (WRITES.has(method) || left <= 0)
        throw new JsonRpcError('transport', method, 'the connection was closed before an answer');
      return this.send<T>(method, params, left).catch((e: unknown) => {
        throw e instanceof StaleSocketError
          ? new JsonRpcError('transport', method, 'the connection was closed before an answer')
          : e;
      });
    }
  }

  private send<T>(method: string, params: unknown, timeoutMs: number): Promise<T> {
    const url = this.url;
    if (!url)
      return Promise.reject(new JsonRpcError('invalid', method, 'the configured RPC URL is not an http(s) URL'));
    const body = JSON.stringify(
      params === undefined
        ? { jsonrpc: '2.0', id: this.nextId++, method }
        : { jsonrpc: '2.0', id: this.nextId++, method, params },
    );
    const https_ = url.protocol === 'https:';
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const finish = (err: Error | null, value?: T) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value as T);
      };
      const fail = (kind: JsonRpcFailure, message: string, code?: number) =>
        finish(new JsonRpcError(kind, method, message, code));
      const options: https.RequestOptions = {
        method: 'POST',
        agent: this.agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        ...(https_ ? { ca: https.globalAgent.options.ca } : {}),
      };
      const req = (https_ ? https : http).request(url, options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= MAX_ANSWER_BYTES) chunks.push(c);
          else {
            fail('invalid', `the answer exceeds ${MAX_ANSWER_BYTES} bytes`);
            req.destroy();
          }
        });
        res.on('error', () => fail('transport', 'the answer was cut off'));
        res.on('end', () => {
          if (res.statusCode !== 200) return fail('http', `HTTP ${res.statusCode}`);
          let parsed: { result?: T; error?: { code?: number; message?: string } };
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof parsed;
          } catch {
            return fail('invalid', 'the answer is not JSON');
          }
          if (parsed?.error)
            return fail(
              'rpc',
              `${String(parsed.error.message ?? 'error').slice(0, 200)} (${parsed.error.code ?? '?'})`,
              parsed.error.code,
            );
          if (parsed?.result === undefined) return fail('invalid', 'no result');
          finish(null, parsed.result);
        });
      });
      const timer = setTimeout(() => {
        fail('timeout', `no answer within ${timeoutMs} ms`);
        req.destroy();
      }, timeoutMs);
      let answered = false;
      req.on('response', () => (answered = true));
      req.on('error', (e: NodeJS.ErrnoException) => {
        // the server closed a kept-alive socket just as it was reused: nothing was answered
        const stale =
          req.reusedSocket &&
          !answered &&
          (e.code === 'ECONNRESET' || e.code === 'EPIPE' || e.message === 'socket hang up');
        if (stale) finish(new StaleSocketError(e.code ?? 'socket hang up'));
        else fail('transport', e.code ?? 'connection failed');
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

const clients = new Map<string, JsonRpcClient>();

/** The client of one RPC URL, shared by every caller in this process (one keep-alive pool per RPC). */
export function jsonRpcClient(url: string): JsonRpcClient {
  let client = clients.get(url);
  if (!client) clients.set(url, (client = new JsonRpcClient(url)));
  return client;
}
