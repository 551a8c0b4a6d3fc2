import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import {
  DomainCheckError,
  checkDomain,
  newChallengeToken,
  type DomainCheckPorts,
} from '../../src/domain/sellers/domain-verification';
import { createDnsTxtResolver } from '../../src/net';
import { WALLET } from './local-server';

const DOMAIN = 'shop.example.com';
const NAME = '_marketplace-verification.shop.example.com';

describe('checkDomain dns_txt with an injected resolver', () => {
  const token = newChallengeToken();
  const run = (resolveTxt: DomainCheckPorts['resolveTxt']) =>
    checkDomain('dns_txt', { domain: DOMAIN, walletAddress: WALLET, token }, { fetchText: jest.fn(), resolveTxt });

  it(
    'is verified when a TXT record at ' + '_marketplace-verification.<domain> is ' + 'marketplace-verification=<token>',
    async () => {
      const resolveTxt = jest.fn(async () => [['v=spf1 -all'], [`marketplace-verification=${token}`]]);
      await expect(run(resolveTxt)).resolves.toEqual({ verified: true, reason: null, message: null });
      expect(resolveTxt).toHaveBeenCalledWith(NAME);
    },
  );

  it('is verified when the record arrives split into chunks', async () => {
    await expect(
      run(async () => [['marketplace-verif', 'ication=', token.slice(0, 10), token.slice(10)]]),
    ).resolves.toMatchObject({ verified: true });
  });

  it('fails with record_missing when there is no TXT record', async () => {
    await expect(run(async () => [])).resolves.toEqual({
      verified: false,
      reason: 'record_missing',
      message: `There is no TXT record at ${NAME}`,
    });
  });

  it('fails with token_mismatch when the records hold another token', async () => {
    const result = await run(async () => [[`marketplace-verification=${newChallengeToken()}`]]);
    expect(result).toMatchObject({ verified: false, reason: 'token_mismatch' });
  });

  it('passes on the reason of a resolver failure', async () => {
    await expect(
      run(async () => {
        throw new DomainCheckError('dns_failure', `The TXT lookup for ${NAME} failed (ESERVFAIL)`);
      }),
    ).resolves.toMatchObject({ verified: false, reason: 'dns_failure' });
  });
});

/**
 * A tiny DNS server on 127.0.0.1 (UDP): answers TXT queries from a table, NXDOMAIN for unknown names, and stays
 * silent for names in `silent` so the resolver times out.
 */
async function startDnsStub(txt: Record<string, string[][]>, silent: string[] = [], servfail: string[] = []) {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (query, remote) => {
    let offset = 12;
    const labels: string[] = [];
    while (query[offset] !== 0) {
      labels.push(query.subarray(offset + 1, offset + 1 + query[offset]).toString('ascii'));
      offset += query[offset] + 1;
    }
    const questionEnd = offset + 5;
    const name = labels.join('.').toLowerCase();
    if (silent.includes(name)) return;
    const records = txt[name];
    const rcode = servfail.includes(name) ? 2 : records ? 0 : 3;
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(0x8180 | rcode, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records?.length ?? 0, 6);
    const answers = (records ?? []).map((chunks) => {
      const rdata = Buffer.concat(
        chunks.map((c) => Buffer.concat([Buffer.from([Buffer.byteLength(c)]), Buffer.from(c)])),
      );
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question name
      rr.writeUInt16BE(16, 2); // TXT
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), ...answers]), remote.port, remote.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return { server: `127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}

describe('createDnsTxtResolver against a local DNS server', () => {
  const token = newChallengeToken();
  let stub: Awaited<ReturnType<typeof startDnsStub>>;

  beforeAll(async () => {
    stub = await startDnsStub(
      {
        [NAME]: [['v=other'], ['marketplace-verification=', token]],
        'empty.example.com': [],
      },
      ['slow.example.com'],
      ['broken.example.com'],
    );
  });
  afterAll(() => stub.close());

  it('returns each record as its chunks, and checkDomain verifies the joined record', async () => {
    const resolveTxt = createDnsTxtResolver({ servers: [stub.server] });
    await expect(resolveTxt(NAME)).resolves.toEqual([['v=other'], ['marketplace-verification=', token]]);
    await expect(
      checkDomain('dns_txt', { domain: DOMAIN, walletAddress: WALLET, token }, { fetchText: jest.fn(), resolveTxt }),
    ).resolves.toMatchObject({
      verified: true,
    });
  });

  it('returns no records for a name that does not exist or has no TXT data', async () => {
    const resolveTxt = createDnsTxtResolver({ servers: [stub.server] });
    await expect(resolveTxt('missing.example.com')).resolves.toEqual([]);
    await expect(resolveTxt('empty.example.com')).resolves.toEqual([]);
  });

  it('fails with dns_failure when the server answers SERVFAIL', async () => {
    const resolveTxt = createDnsTxtResolver({ servers: [stub.server], timeoutMs: 1000 });
    await expect(resolveTxt('broken.example.com')).rejects.toMatchObject({
      reason: 'dns_failure',
      message: expect.stringContaining('ESERVFAIL'),
    });
  });

  it('fails with timeout when the server does not answer in time', async () => {
    const resolveTxt = createDnsTxtResolver({ servers: [stub.server], timeoutMs: 300 });
    const started = Date.now();
    await expect(resolveTxt('slow.example.com')).rejects.toMatchObject({ reason: 'timeout' });
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
