import net from 'node:net';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Asset, Keypair } from '@stellar/stellar-sdk';
import { startTestService, type TestService } from '../support/test-service';
import { NetworkRegistry } from '../../src/domain/network-registry';
import { signTransfer } from '../../src/domain/conformance/sign-transfer';
import { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER, loadConfig } from '../../src/config';
import { DEFAULT_RPC_TIMEOUT_MS } from '../../src/domain/defaults';

// An RPC that accepts connections and never answers: the worst case for a request that waits on it.
let hanging: net.Server;
const sockets = new Set<net.Socket>();
let accepted = 0;
let svc: TestService;

beforeAll(async () => {
  hanging = net.createServer((s) => {
    accepted += 1;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
  svc = await startTestService({ networks: hangingNetworks() });
}, 60_000);

/** A real network (not the local one) on the hanging RPC: no channel accounts are funded at start, so start does not
 * touch the RPC. */
function hangingNetworks(): NetworkRegistry {
  const rpcUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/rpc`;
  return new NetworkRegistry([
    {
      network: 'stellar:testnet',
      passphrase: TESTNET_PASSPHRASE,
      rpcUrl,
      settlementEnabled: false,
      local: false,
      assets: [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:testnet'] }],
    },
    {
      network: 'stellar:pubnet',
      passphrase: PUBNET_PASSPHRASE,
      rpcUrl: null,
      settlementEnabled: false,
      assets: [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:pubnet'] }],
    },
  ]);
}

/** A verify body with a freshly signed transfer on stellar:testnet. */
async function verifyBody(): Promise<object> {
  const payer = Keypair.random();
  const payTo = Keypair.random().publicKey();
  const asset = { code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:testnet'] };
  const entry = await signTransfer({
    payer,
    payTo,
    amount: '0.1',
    expiration: 1000,
    passphrase: TESTNET_PASSPHRASE,
    contractId: new Asset(asset.code, asset.issuer).contractId(TESTNET_PASSPHRASE),
  });
  return {
    paymentPayload: {
      x402Version: 2,
      scheme: 'exact',
      network: 'stellar:testnet',
      asset,
      amount: '0.1',
      payTo,
      expiresAtLedger: 1000,
      authorization: { format: 'sorobanAuthorizationEntry', xdr: entry.toXDR('base64') },
    },
    paymentRequirements: {
      scheme: 'exact',
      network: 'stellar:testnet',
      amount: '0.1',
      payTo,
      asset,
      maxTimeoutSeconds: 300,
    },
  };
}
afterAll(async () => {
  await svc.stop();
  for (const s of sockets) s.destroy();
  await new Promise((r) => hanging.close(r));
});

describe('a hanging RPC', () => {
  it(
    'the network-health probe gives up after its timeout and marks the network down; verify then fails fast with ' +
      '503 instead of waiting on the RPC',
    async () => {
      await svc.operations.monitor.probeAll();
      const health = await request(svc.app).get('/health');
      expect(health.body).toMatchObject({
        status: 'degraded',
        affectedNetworks: ['stellar:testnet'],
        checks: { ledger: { 'stellar:testnet': { status: 'down', reason: 'RPC_UNREACHABLE' } } },
      });

      const connectionsBefore = accepted;
      const res = await request(svc.app)
        .post('/v1/verify')
        .send(await verifyBody());
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ ok: false, error: { code: 'SERVICE_UNAVAILABLE' } });
      // The refused request never reached the hanging RPC: no connection was opened for it.
      expect(accepted).toBe(connectionsBefore);
    },
    60_000,
  );
});

describe('RPC_TIMEOUT_MS: the deadline of one RPC call', () => {
  it('is read, bounded and defaults to 8 s', () => {
    const local = { LOCAL_NETWORK: 'true' };
    expect(loadConfig(local).facilitator.rpcTimeoutMs).toBe(DEFAULT_RPC_TIMEOUT_MS);
    expect(DEFAULT_RPC_TIMEOUT_MS).toBe(8000);
    expect(loadConfig({ ...local, RPC_TIMEOUT_MS: '1500' }).facilitator.rpcTimeoutMs).toBe(1500);
    for (const bad of ['999', '60001', 'soon']) {
      expect(() => loadConfig({ ...local, RPC_TIMEOUT_MS: bad })).toThrow(
        /RPC_TIMEOUT_MS must be an integer from 1000 to 60000/,
      );
    }
  });

  it('a verify whose simulation the RPC never answers is refused 503 at the configured deadline, not 8 s', async () => {
    const short = await startTestService({ networks: hangingNetworks(), facilitator: { rpcTimeoutMs: 1000 } });
    try {
      const started = Date.now();
      const res = await request(short.app)
        .post('/v1/verify')
        .send(await verifyBody());
      const waited = Date.now() - started;
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ ok: false, error: { code: 'SERVICE_UNAVAILABLE' } });
      // The network was not known down (no probe ran), so the call went to the RPC and waited for its deadline: at
      // least the configured second, and (a bound on the setting being ignored, not on speed) short of the default.
      expect(waited).toBeGreaterThanOrEqual(1000);
      expect(waited).toBeLessThan(DEFAULT_RPC_TIMEOUT_MS);
    } finally {
      await short.stop();
    }
  }, 60_000);
});
