import { createService, type Service, type ServiceOptions } from '../../src/compose';
import { NetworkRegistry } from '../../src/domain/network-registry';
import { TESTNET_PASSPHRASE, PUBNET_PASSPHRASE, DEFAULT_USDC_ISSUER } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createTestDatabase } from './database';

export const OPERATOR_KEY = 'mk_op_test_operator_key_0123456789abcdef';

/** stellar:testnet as the local network with Circle's testnet USDC issuer; stellar:pubnet without settlement. */
export function testNetworks(
  testnet: { rpcUrl?: string | null; assets?: Array<{ code: string; issuer: string }> } = {},
): NetworkRegistry {
  return new NetworkRegistry([
    {
      network: 'stellar:testnet',
      passphrase: TESTNET_PASSPHRASE,
      rpcUrl: testnet.rpcUrl ?? null,
      settlementEnabled: true,
      local: true,
      assets: testnet.assets ?? [{ code: 'USDC', issuer: DEFAULT_USDC_ISSUER['stellar:testnet'] }],
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

export interface TestService extends Service {
  databaseUrl: string;
  stop(): Promise<void>;
}

/** The real service on a fresh database, with response validation on: a response that breaks the contract fails. */
export async function startTestService(overrides: Partial<ServiceOptions> = {}): Promise<TestService> {
  const database = await createTestDatabase();
  const service = await createService({
    databaseUrl: database.url,
    environment: 'test',
    version: '0.0.0-test',
    commit: null,
    networks: overrides.networks ?? testNetworks(),
    operatorApiKey: OPERATOR_KEY,
    rateLimit: { points: 10_000, windowSeconds: 60 },
    bodyLimitBytes: 256 * 1024,
    responseValidation: true,
    logger: createLogger({ silent: !process.env.TEST_LOGS }),
    ...overrides,
  });
  return {
    ...service,
    databaseUrl: database.url,
    async stop() {
      await service.close();
      await database.drop();
    },
  };
}
