import http from 'node:http';
import https from 'node:https';

/**
 * The hot ledger read of verify (getLedgerEntries) without the Stellar SDK's axios client, and shared by concurrent
 * verifies (issue #14: axios was ~14 % of a verify's CPU, and every RPC call is a socket write and a read).
 *
 * - `JsonRpcClient`: one JSON-RPC POST over a keep-alive agent (node:http/https), a deadline per call, the JSON-RPC
 *   error object turned into an Error. Idle sockets are closed after IDLE_SOCKET_MS, below the 5 s keep-alive
 *   timeout of Node servers (and of Soroban RPC's proxies), and a call whose REUSED socket was closed by the server
 *   before any answer (ECONNRESET / socket hang up: the keep-alive race) is sent once more on a new socket: the
 *   methods sent here are reads. Nothing else (no redirects; any other failure is answered SERVICE_UNAVAILABLE by
 *   the ledger adapter, as before).
 * - `LedgerEntriesBatcher`: every key asked for during one turn of the event loop goes into ONE getLedgerEntries
 *   call (at most MAX_KEYS_PER_CALL keys per call, Soroban RPC's own limit; more keys make several calls, sent at
 *   once). The call is sent from setImmediate, i.e. after the I/O callbacks of the current turn have run, so a
 *   request waits for no timer: it shares the call with whatever else was asked for in the same turn. Each waiter
 *   gets the entry of its own key (or null when the ledger has none), or the call's error. A key asked for twice in
 *   one batch is sent once.
 *
 * Reads only: nothing here decides about money. An entry read in a batch is the ledger's state at the time of that
 * call, exactly as a call of its own would have read it.
 */
export const MAX_KEYS_PER_CALL = 200;
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

/** One entry as getLedgerEntries answers it: `xdr` is the base64 LedgerEntryData. */
export interface RawLedgerEntry {
  key: string;
  xdr: string;
}

interface Waiter {
  key: string;
  resolve(entry: RawLedgerEntry | null): void;
  reject(err: unknown): void;
}

export class LedgerEntriesBatcher {
  private queue: Waiter[] = [];
  private scheduled = false;

  /** `send` makes one getLedgerEntries call with these keys (base64 LedgerKey XDR) and answers its entries. */
  constructor(private readonly send: (keys: string[]) => Promise<RawLedgerEntry[]>) {}

  /** The entries of these keys (base64 LedgerKey XDR), in the same order; null where the ledger has none. */
  get(keys: string[]): Promise<Array<RawLedgerEntry | null>> {
    const answers = Promise.all(keys.map((key) => new Promise<RawLedgerEntry | null>((resolve, reject) => this.queue.push({ key, resolve, reject }))));
    this.schedule();
    return answers;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.scheduled = false;
    const waiters = this.queue;
    this.queue = [];
    const byKey = new Map<string, Waiter[]>();
    for (const w of waiters) {
      const list = byKey.get(w.key);
      if (list) list.push(w);
      else byKey.set(w.key, [w]);
    }
    const unique = [...byKey.keys()];
    for (let i = 0; i < unique.length; i += MAX_KEYS_PER_CALL) {
      const chunk = unique.slice(i, i + MAX_KEYS_PER_CALL);
      this.send(chunk).then(
        (entries) => {
          const found = new Map(entries.map((e) => [e.key, e]));
          for (const key of chunk) for (const w of byKey.get(key)!) w.resolve(found.get(key) ?? null);
        },
        (err: unknown) => {
          for (const key of chunk) for (const w of byKey.get(key)!) w.reject(err);
        },
      );
    }
  }
}
