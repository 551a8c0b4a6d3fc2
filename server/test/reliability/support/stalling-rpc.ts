import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP front of a network's JSON-RPC that forwards everything, except that while `state.stall` is on it never
 * answers the one method named `stalled` (the request is held open, as by an RPC that hangs); `state.sent` counts
 * every `sendTransaction` forwarded (nothing may be broadcast twice).
 */
export async function startStallingRpc(target: string, stalled: string) {
  const state = { stall: false, sent: 0 };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    let method = '';
    try {
      method = String((JSON.parse(body.toString('utf8')) as { method?: unknown }).method ?? '');
    } catch {
      // forwarded as is
    }
    if (method === 'sendTransaction') state.sent++;
    if (state.stall && method === stalled) return; // held open, never answered
    try {
      const r = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await r.arrayBuffer()));
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type StallingRpc = Awaited<ReturnType<typeof startStallingRpc>>;
