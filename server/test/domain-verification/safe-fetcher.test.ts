import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { DomainCheckError } from '../../src/domain/sellers/domain-verification';
import { createSafeFetcher } from '../../src/net';
import { startLocalServer, type LocalServer } from './local-server';

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return err instanceof DomainCheckError ? err.reason : `unexpected ${String(err)}`;
  }
  return 'resolved';
}

describe('safe fetcher with default (production) flags', () => {
  let tcp: net.Server;
  let port: number;
  let connections: number;
  let connectSpy: jest.SpyInstance;
  let requestSpies: jest.SpyInstance[];

  beforeAll(async () => {
    // A listener on loopback: if the fetcher ever connected, this would count it.
    connections = 0;
    tcp = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    port = (tcp.address() as AddressInfo).port;
  });

  beforeEach(() => {
    // Tripwires: no socket may be opened by any of these tests (and so no traffic can leave the machine).
    connectSpy = jest.spyOn(net.Socket.prototype, 'connect').mockImplementation(() => {
      throw new Error('tripwire: a connection was attempted');
    });
    requestSpies = [jest.spyOn(https, 'request'), jest.spyOn(http, 'request')];
  });

  afterEach(() => jest.restoreAllMocks());
  afterAll(() => new Promise<void>((resolve) => tcp.close(() => resolve())));

  const fetchText = createSafeFetcher();

  function expectNoConnection(): void {
    expect(connectSpy).not.toHaveBeenCalled();
    for (const spy of requestSpies) expect(spy).not.toHaveBeenCalled();
    expect(connections).toBe(0);
  }

  it('refuses http:// with insecure_url', async () => {
    expect(await reasonOf(fetchText(`http://example.com/.well-known/stellar.toml`))).toBe('insecure_url');
    expectNoConnection();
  });

  it.each(['ftp://example.com/x', 'file:///etc/passwd', 'not a url', 'https://user:pw@example.com/x'])(
    'refuses %s with insecure_url',
    async (url) => {
      expect(await reasonOf(fetchText(url))).toBe('insecure_url');
      expectNoConnection();
    },
  );

  it.each([
    'https://127.0.0.1/',
    'https://127.1/',
    'https://2130706433/',
    'https://10.0.0.1/',
    'https://192.168.0.10/',
    'https://100.64.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://0.0.0.0/',
    'https://[::1]/',
    'https://[::]/',
    'https://[fd00:ec2::254]/',
    'https://[fe80::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:169.254.169.254]/',
  ])('refuses %s with private_address without connecting', async (url) => {
    const lookup = jest.spyOn(dns.promises, 'lookup');
    expect(await reasonOf(fetchText(url))).toBe('private_address');
    expect(lookup).not.toHaveBeenCalled(); // IP literals are checked as they are
    expectNoConnection();
  });

  it('refuses a host name that resolves to loopback (localhost) without connecting to the listening port', async () => {
    expect(await reasonOf(fetchText(`https://localhost:${port}/.well-known/stellar.toml`))).toBe('private_address');
    expectNoConnection();
  });

  it('refuses a host name when any one of its addresses is private', async () => {
    const mixed = createSafeFetcher({
      lookup: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '10.1.2.3', family: 4 },
      ],
    });
    expect(await reasonOf(mixed('https://shop.example/.well-known/stellar.toml'))).toBe('private_address');
    expectNoConnection();
  });

  it('fails with dns_failure when the name does not resolve', async () => {
    const failing = createSafeFetcher({
      lookup: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND shop.example'), { code: 'ENOTFOUND' });
      },
    });
    await expect(failing('https://shop.example/x')).rejects.toMatchObject({
      reason: 'dns_failure',
      message: 'shop.example did not resolve (ENOTFOUND)',
    });
    expectNoConnection();
  });

  it('fails with timeout when resolving takes longer than the budget', async () => {
    const slow = createSafeFetcher({ timeoutMs: 50, lookup: () => new Promise(() => undefined) });
    expect(await reasonOf(slow('https://shop.example/x'))).toBe('timeout');
    expectNoConnection();
  });
});

describe('safe fetcher against a local server (test flags on)', () => {
  let server: LocalServer;
  let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  const fetchText = createSafeFetcher({
    allowInsecureForTests: true,
    allowPrivateAddressesForTests: true,
    timeoutMs: 500,
    maxBytes: 1024,
  });

  beforeAll(async () => {
    server = await startLocalServer((req, res) => handler(req, res));
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
    server.hosts.length = 0;
  });

  it('returns status and body of a 200', async () => {
    handler = (_req, res) => res.writeHead(200).end('\ufeffhello');
    await expect(fetchText(`${server.origin}/a?b=1`)).resolves.toEqual({ status: 200, body: 'hello' });
    expect(server.requests).toEqual(['/a?b=1']);
  });

  it('returns the status of a non-200 without its body', async () => {
    handler = (_req, res) => res.writeHead(500).end('stack trace with secrets');
    await expect(fetchText(`${server.origin}/`)).resolves.toEqual({ status: 500, body: '' });
  });

  it('does not follow a redirect', async () => {
    handler = (req, res) =>
      req.url === '/start' ? res.writeHead(302, { location: '/target' }).end() : res.writeHead(200).end('target');
    await expect(fetchText(`${server.origin}/start`)).resolves.toEqual({ status: 302, body: '' });
    expect(server.requests).toEqual(['/start']);
  });

  it('connects to the vetted address and never resolves the name a second time (DNS rebinding)', async () => {
    handler = (_req, res) => res.writeHead(200).end('pinned');
    let lookups = 0;
    const pinned = createSafeFetcher({
      allowInsecureForTests: true,
      allowPrivateAddressesForTests: true,
      lookup: async () => {
        lookups++;
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    // If the socket did its own lookup of shop.example, this would throw instead of querying a real resolver.
    const systemLookup = jest.spyOn(dns, 'lookup').mockImplementation(() => {
      throw new Error('tripwire: the system resolver was used');
    });
    await expect(pinned(`http://shop.example:${server.port}/x`)).resolves.toEqual({ status: 200, body: 'pinned' });
    expect(lookups).toBe(1);
    expect(systemLookup).not.toHaveBeenCalled();
    expect(server.hosts).toEqual([`shop.example:${server.port}`]);
    systemLookup.mockRestore();
  });

  it('aborts a body larger than maxBytes with too_large (declared length)', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-length': '2048' }).end('x'.repeat(2048));
    expect(await reasonOf(fetchText(`${server.origin}/`))).toBe('too_large');
  });

  it('aborts a streamed body once it passes maxBytes with too_large', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 20; i++) res.write('y'.repeat(512));
      res.end();
    };
    expect(await reasonOf(fetchText(`${server.origin}/`))).toBe('too_large');
  });

  it('fails with timeout when the server never answers', async () => {
    handler = () => undefined;
    const started = Date.now();
    expect(await reasonOf(fetchText(`${server.origin}/`))).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('fails with timeout when the body trickles past the total budget', async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write('a');
      setTimeout(() => res.end('b'), 1500).unref();
    };
    expect(await reasonOf(fetchText(`${server.origin}/`))).toBe('timeout');
  });

  it('fails with connection_failed when nothing listens', async () => {
    const closed = await startLocalServer(() => undefined);
    await closed.close();
    await expect(fetchText(`${closed.origin}/`)).rejects.toMatchObject({
      reason: 'connection_failed',
      message: expect.stringContaining('ECONNREFUSED'),
    });
  });
});
