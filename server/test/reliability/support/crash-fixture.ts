import { Keypair } from '@stellar/stellar-sdk';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { createTestDatabase } from '../../support/database';
import { startMainProcess, type MainProcess } from './main-process';

/**
 * The setting of the crash tests (crash-during-settlement, crash-with-channels-leased), as `beforeAll`/`afterAll` of
 * the calling file: one database; the local Stellar network in the test process (100 ms ledgers), so killing the
 * server never rewinds the ledger; four funded channel accounts; and `start()`, main.ts in a child process against
 * them (every process started is killed at the end).
 */
export function useCrashFixture() {
  let database: { url: string; drop(): Promise<void> };
  let network: LocalNetwork;
  const channels = Array.from({ length: 4 }, () => Keypair.random());
  const mains: MainProcess[] = [];
  const usdc = () => network.assets.find((a) => a.code === 'USDC')!;

  beforeAll(async () => {
    database = await createTestDatabase();
    network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
    for (const k of channels) await network.fundAccount(k.publicKey());
  }, 60_000);

  afterAll(async () => {
    for (const m of mains) await m.cleanup();
    await network?.stop();
    await database?.drop();
  });

  return {
    get database() {
      return database;
    },
    get network() {
      return network;
    },
    get usdc() {
      return usdc();
    },
    channels,
    async start(opts: { rpcUrl?: string; leaseSeconds?: number } = {}): Promise<MainProcess> {
      const m = await startMainProcess({
        databaseUrl: database.url,
        env: {
          LOCAL_NETWORK: 'false',
          STELLAR_TESTNET_RPC_URL: opts.rpcUrl ?? network.rpcUrl,
          STELLAR_TESTNET_ASSETS: `USDC:${usdc().issuer}`,
          STELLAR_TESTNET_CHANNEL_SECRETS: channels.map((k) => k.secret()).join(','),
          SETTLEMENT_TX_TIMEOUT_SECONDS: '10',
          // The network's pace (100 ms ledgers): the validity window is converted with it.
          LEDGER_CLOSE_MS: '100',
          // Claims abandoned by a killed process are failed after 5 s (default 120 s), so the waits cover them.
          FACILITATOR_ABANDONED_CLAIM_SECONDS: '5',
          // The worker that fails them and expires attempts whose authorization expired runs every 2 s (default
          // 60 s): the waits end when it has, not a minute later.
          STALE_PAYMENT_CLEANUP_INTERVAL_SECONDS: '2',
          // Every settle here is for one seller and one client: the whole pool is theirs (fair capacity caps are
          // tested in fair-capacity.test.ts).
          FACILITATOR_CHANNELS_PER_SELLER: '256',
          FACILITATOR_CHANNELS_PER_PAYER: '256',
          FACILITATOR_CHANNELS_PER_CLIENT: '256',
          ...(opts.leaseSeconds ? { FACILITATOR_CHANNEL_LEASE_SECONDS: String(opts.leaseSeconds) } : {}),
        },
      });
      mains.push(m);
      return m;
    },
  };
}
