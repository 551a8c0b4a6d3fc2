import http from 'node:http';
import https from 'node:https';

/**
 * The ledger's JSON-RPC reads without the Stellar SDK's axios client (issue #14: axios was ~14 % of a verify's CPU):
 * one JSON-RPC POST over a keep-alive agent (node:http/https), a deadline per call, the JSON-RPC error object turned
 * into an Error. Idle sockets are closed after IDLE_SOCKET_MS, below the 5 s keep-alive timeout of Node servers (and
 * of Soroban RPC's proxies), and a call whose REUSED socket was closed by the server before any answer (ECONNRESET /
 * socket hang up: the keep-alive race) is sent once more on a new socket: the methods sent here are reads
 * (simulateTransaction for verify and settle). Nothing else (no redirects; any other failure is answered
 * SERVICE_UNAVAILABLE by the ledger adapter). Nothing here decides about money.
 */
/** Idle keep-alive sockets are closed after this long (Node's own global agent uses 5 s). */
const IDLE_SOCKET_MS = 4000;

export class JsonRpcError extends Error {}
class StaleSocketError extends Error {}

export class JsonRpcClient {
  private readonly url: URL;
  private readonly agent: http.Agent;
  private nextId = 1;

  constructor(
    url: string,
    private readonly timeoutMs: number,
  ) {
    this.url = new URL(url);
    const options = { keepAlive: true, maxSockets: 64, timeout: IDLE_SOCKET_MS };
    this.agent = this.url.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
  }

  /** One call of a read method (it may be sent twice, see above). */
  async call<T>(method: string, params: unknown): Promise<T> {
    const deadline = Date.now() + this.timeoutMs;
    try {
      return await this.send<T>(method, params, this.timeoutMs);
    } catch (err) {
      const left = deadline - Date.now();
      if (!(err instanceof StaleSocketError) || left <= 0) throw err;
      return this.send<T>(method, params, left);
    }
  }

  private send<T>(method: string, params: unknown, timeoutMs: number): Promise<T> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    const transport = this.url.protocol === 'https:' ? https : http;
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const finish = (err: Error | null, value?: T) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value as T);
      };
      const req = transport.request(
        this.url,
        { method: 'POST', agent: this.agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (e) => finish(e));
          res.on('end', () => {
            if (res.statusCode !== 200) return finish(new JsonRpcError(`${method}: HTTP ${res.statusCode}`));
            let parsed: { result?: T; error?: { code?: number; message?: string } };
            try {
              parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof parsed;
            } catch {
              return finish(new JsonRpcError(`${method}: the answer is not JSON`));
            }
            if (parsed.error) return finish(new JsonRpcError(`${method}: ${parsed.error.message ?? 'error'} (${parsed.error.code ?? '?'})`));
            if (parsed.result === undefined) return finish(new JsonRpcError(`${method}: no result`));
            finish(null, parsed.result);
          });
        },
      );
      const timer = setTimeout(() => {
        finish(new JsonRpcError(`${method} did not answer within ${timeoutMs} ms`));
        req.destroy();
      }, timeoutMs);
      let answered = false;
      req.on('response', () => (answered = true));
      req.on('error', (e: NodeJS.ErrnoException) => {
        // the server closed a kept-alive socket just as it was reused: nothing was answered, send again
        const stale = req.reusedSocket && !answered && (e.code === 'ECONNRESET' || e.code === 'EPIPE' || e.message === 'socket hang up');
        finish(stale ? new StaleSocketError(e.message) : e);
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
