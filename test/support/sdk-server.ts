import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { startTestService, type TestService } from '../../server/test/support/test-service';

export interface RunningServer {
  service: TestService;
  baseUrl: string;
  close(): Promise<void>;
}

/** The real service (fresh database) listening on an ephemeral port, so the SDK talks HTTP to it. */
export async function startServer(overrides: Parameters<typeof startTestService>[0] = {}): Promise<RunningServer> {
  const service = await startTestService(overrides);
  const server: Server = await new Promise((resolve) => {
    const s = service.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    service,
    baseUrl: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await service.stop();
    },
  };
}

/** A fetch that records every request it sends (method, URL, headers) and can inject failures. */
export function recordingFetch(
  inject?: (request: Request, attempt: number) => Response | Error | undefined | Promise<Response | Error | undefined>,
) {
  const calls: Array<{ method: string; url: string; headers: Headers; status?: number; retryAfter?: string | null }> =
    [];
  const fetchFn = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? input : new Request(input, init);
    const call: (typeof calls)[number] = {
      method: request.method,
      url: request.url,
      headers: new Headers(request.headers),
    };
    calls.push(call);
    const injected = await inject?.(request.clone(), calls.length);
    if (injected instanceof Error) throw injected;
    if (injected) {
      call.status = injected.status;
      return injected;
    }
    const response = await fetch(request);
    call.status = response.status;
    call.retryAfter = response.headers.get('retry-after');
    return response;
  };
  return { fetch: fetchFn as typeof globalThis.fetch, calls };
}
