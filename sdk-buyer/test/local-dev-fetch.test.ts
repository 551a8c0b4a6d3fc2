import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { localDevFetch as buyerLocalDevFetch } from '../src';
import { localDevFetch as sellerLocalDevFetch } from '../../sdk-seller/src';

describe('localDevFetch (exported by both SDKs)', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () =>
        res.end(
          JSON.stringify({
            host: req.headers.host,
            method: req.method,
            url: req.url,
            body,
            header: req.headers['x-check'] ?? null,
          }),
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it.each([
    ['buyer', buyerLocalDevFetch],
    ['seller', sellerLocalDevFetch],
  ])(
    'the %s SDK’s localDevFetch sends a *.test host to 127.0.0.1 with its method, path, headers and body',
    async (_sdk, f) => {
      const res = await f(`http://shop-1.test:${port}/v1/forecast/Porto?x=1`, {
        method: 'POST',
        headers: { 'x-check': 'yes' },
        body: 'hello',
      });
      expect(await res.json()).toEqual({
        host: `127.0.0.1:${port}`,
        method: 'POST',
        url: '/v1/forecast/Porto?x=1',
        body: 'hello',
        header: 'yes',
      });
    },
  );

  it('a plain fetch of a *.test seller fails (nothing resolves .test), which is why the helper exists', async () => {
    await expect(fetch(`http://shop-1.test:${port}/`)).rejects.toThrow(/fetch failed/);
  });

  it('leaves every other host unchanged', async () => {
    const res = await buyerLocalDevFetch(`http://127.0.0.1:${port}/plain`);
    expect((await res.json()).url).toBe('/plain');
  });
});
