import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LocalServer {
  /** http://127.0.0.1:PORT */
  origin: string;
  port: number;
  /** Paths requested, in order. */
  requests: string[];
  /** Host headers received, in order. */
  hosts: string[];
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 (ephemeral port) answering with the given handler. */
export async function startLocalServer(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<LocalServer> {
  const requests: string[] = [];
  const hosts: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    hosts.push(req.headers.host ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    hosts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Serves fixed bodies by path; anything else is a 404. */
export function routes(table: Record<string, string>): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    const body = table[req.url ?? ''];
    if (body === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
  };
}

export const WALLET = 'GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H';
export const OTHER_WALLET = 'GCEZWKCA5VLDNRLN3RPRJMRZOX3Z6G5CHCGSNFHEYVXM3XOJMDS674JZ';
