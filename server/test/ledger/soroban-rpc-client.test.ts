/**
 * The one JSON-RPC client of the ledger (server/src/ledger/json-rpc-client.ts, soroban-rpc.ts) against the real
 * local network: ledger-entry lookups asked in one tick go out as ONE getLedgerEntries, each read afresh; a hanging
 * RPC fails the call with JsonRpcError 'timeout' at its deadline; no error names the RPC URL (it may hold a key).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import type { LocalNetwork } from '@paid-api-marketplace/local-network';
import { JsonRpcClient, JsonRpcError } from '../../src/ledger/json-rpc-client';
import { SorobanRpc } from '../../src/ledger/soroban-rpc';
import { fundedAccount, startTestNetwork } from '../../../local-network/test/helpers';

/** A pass-through HTTP proxy in front of the network's RPC that records the JSON-RPC methods it forwards. */
async function countingProxy(target: string): Promise<{ url: string; methods: string[]; close(): Promise<void> }> {
  const upstream = new URL(target);
  const methods: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      methods.push((JSON.parse(body.toString('utf8')) as { method: string }).method);
      const out = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: upstream.pathname,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
        },
        (up) => {
          res.writeHead(up.statusCode ?? 502, { 'content-type': 'application/json' });
          up.pipe(res);
        },
      );
      out.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`,
    methods,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('the ledger JSON-RPC client', () => {
  let network: LocalNetwork;
  beforeAll(async () => {
    network = await startTestNetwork();
  });
  afterAll(() => network.stop());

  it(
    'when ten accounts and one missing account are looked up in the same tick, one getLedgerEntries answers them ' +
      'all, and a later lookup reads the new sequence number',
    async () => {
      const accounts = await Promise.all(Array.from({ length: 10 }, () => fundedAccount(network, '0')));
      const proxy = await countingProxy(network.rpcUrl);
      try {
        const rpc = new SorobanRpc(new JsonRpcClient(proxy.url), 5_000);
        const missing = Keypair.random().publicKey();
        const found = await Promise.all([...accounts.map((a) => rpc.account(a.publicKey())), rpc.account(missing)]);
        expect(proxy.methods).toEqual(['getLedgerEntries']);
        expect(found.slice(0, 10).map((a) => a?.accountId())).toEqual(accounts.map((a) => a.publicKey()));
        expect(found[10]).toBeNull();

        const before = BigInt(found[0]!.sequenceNumber());
        await network.fundAccount(missing);
        const [again, created] = await Promise.all([rpc.account(accounts[0].publicKey()), rpc.account(missing)]);
        expect(proxy.methods).toEqual(['getLedgerEntries', 'getLedgerEntries']);
        expect(BigInt(again!.sequenceNumber())).toBe(before);
        expect(created?.accountId()).toBe(missing);
      } finally {
        await proxy.close();
      }
    },
  );

  it(
    'when the RPC accepts the connection and never answers, the call fails with JsonRpcError timeout at its ' +
      'deadline, and the error names the method, never the URL',
    async () => {
      const sockets = new Set<net.Socket>();
      const hanging = net.createServer((s) => {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      });
      await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
      const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/rpc/secret-api-key-123`;
      try {
        const err = await new SorobanRpc(new JsonRpcClient(url), 300).latestLedger().then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(JsonRpcError);
        expect(err).toMatchObject({ kind: 'timeout', method: 'getLatestLedger' });
        expect(String((err as Error).message)).not.toContain('secret-api-key-123');
        expect(String((err as Error).message)).not.toContain('127.0.0.1');
      } finally {
        for (const s of sockets) s.destroy();
        await new Promise((r) => hanging.close(r));
      }
    },
  );

  it(
    'when nothing listens on the RPC URL, the call fails with JsonRpcError transport and no address in its ' +
      'message',
    async () => {
      const probe = net.createServer();
      await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
      const port = (probe.address() as AddressInfo).port;
      await new Promise((r) => probe.close(r));
      const err = await new SorobanRpc(new JsonRpcClient(`http://127.0.0.1:${port}/rpc?apikey=k`), 2_000).health().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ name: 'JsonRpcError', kind: 'transport', method: 'getHealth' });
      expect(String((err as Error).message)).not.toMatch(/127\.0\.0\.1|apikey/);
    },
  );
});
