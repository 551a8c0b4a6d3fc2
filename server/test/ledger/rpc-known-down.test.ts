/**
 * The ledger adapter fails fast on a network the health worker records as down (server/src/ledger/rpc-health.ts),
 * but not on an RPC that answered this process within the probe interval: a saturated RPC whose health probe timed
 * out is not a dead one (issue #31, seen in bench:verify at load 20: every verify refused 503 until the next probe).
 */
import client from 'prom-client';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { SorobanLedger } from '../../src/ledger/soroban-ledger';
import { bindAvailability } from '../../src/ledger/rpc-health';
import { defineFacilitatorMetrics } from '../../src/metrics/facilitator';
import { testNetworks } from '../support/test-service';

describe('an RPC the health worker records as down', () => {
  let network: LocalNetwork;
  beforeAll(async () => {
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 0 });
  });
  afterAll(() => network.stop().catch(() => undefined));

  it(
    'is still asked while it answered this process within the probe interval (a saturated RPC whose probe timed ' +
      'out), and is refused fast once a call to it failed',
    async () => {
      const networks = testNetworks({ rpcUrl: network.rpcUrl });
      let recordedDown = true;
      bindAvailability(networks, () => recordedDown);
      const ledger = new SorobanLedger(networks, defineFacilitatorMetrics(new client.Registry()), {
        maxFeeStroops: 1_000_000,
        txTimeoutSeconds: 30,
        rpcTimeoutMs: 2000,
      });
      // Recorded down and never heard from: refused without asking.
      await expect(ledger.latestLedger('stellar:testnet')).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringMatching(/is down/),
      });
      recordedDown = false;
      const first = await ledger.latestLedger('stellar:testnet');
      // The probe times out behind a saturated RPC: the record says down, but the RPC just answered us.
      recordedDown = true;
      expect(await ledger.latestLedger('stellar:testnet')).toBeGreaterThanOrEqual(first);
      // The RPC really dies: the next call fails on the wire, and every call after it fails fast again.
      await network.stop();
      await expect(ledger.latestLedger('stellar:testnet')).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringMatching(/unavailable/),
      });
      await expect(ledger.latestLedger('stellar:testnet')).rejects.toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringMatching(/is down/),
      });
    },
  );
});
