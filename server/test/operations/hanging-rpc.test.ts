import net from 'node:net';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { Asset, Keypair } from '@stellar/stellar-sdk';
import { startTestService, type TestService } from '../support/test-service';
import { NetworkRegistry } from '../../src/domain/network-registry';
import { signTransfer } from '../../src/domain/conformance/sign-transfer';
import { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER } from '../../src/config';

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
  const rpcUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/rpc`;
  // A real network (not the local one): no channel accounts are funded at start, so start does not touch the RPC.
  svc = await startTestService({
    networks: new NetworkRegistry([
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
    ]),
  });
}, 60_000);
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
      const connectionsBefore = accepted;
      const res = await request(svc.app)
        .post('/v1/verify')
        .send({
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
        });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ ok: false, error: { code: 'SERVICE_UNAVAILABLE' } });
      // The refused request never reached the hanging RPC: no connection was opened for it.
      expect(accepted).toBe(connectionsBefore);
    },
    60_000,
  );
});
