import net from 'node:net';

/**
 * A TCP proxy in front of a real server (here the local network's Soroban RPC), which a test can take down: `up`
 * forwards every connection; `refuse` resets new and open connections at once (an RPC that is down); `blackhole`
 * accepts connections and never answers (an RPC that hangs). Nothing of the service is mocked: it talks HTTP to
 * this port as it would to any RPC.
 */
export interface TcpProxy {
  url: string;
  mode: 'up' | 'refuse' | 'blackhole';
  set(mode: TcpProxy['mode']): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<net.Socket>();
  const proxy: TcpProxy = {
    url: '',
    mode: 'up',
    set(mode) {
      proxy.mode = mode;
      if (mode !== 'up') for (const s of sockets) s.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    if (proxy.mode === 'refuse') return client.resetAndDestroy();
    if (proxy.mode === 'blackhole') return; // held open, never answered
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  proxy.url = `${target.protocol}//127.0.0.1:${port}${target.pathname}`;
  return proxy;
}
