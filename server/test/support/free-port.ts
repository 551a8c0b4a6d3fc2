import net from 'node:net';

/**
 * A port free now, for a server a test starts later (a child process, Prometheus). Picked below Linux's ephemeral
 * range (32768-60999), so that the outgoing connections of test files running beside (which take their local ports
 * from that range) do not take it before the server binds it.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(candidate, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return candidate;
  }
}
