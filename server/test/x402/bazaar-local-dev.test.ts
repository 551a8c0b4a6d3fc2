/**
 * Bazaar v2 (issue #30) under LOCAL_DEV_DOMAINS (local development only), against the running service (embedded
 * PostgreSQL, the local Stellar network with real XDR and ed25519 signatures; local simulation). x402's own e2e
 * servers run on `localhost`, which no seller can prove: with the switch on, a paid localhost URL is learned for the
 * seller whose wallet was paid, listed as `localDev` and unproven; a public host still needs its domain verified.
 * The switch off (a deployment) is tested in bazaar-v2.test.ts: one service per test process, since the data models
 * are bound to one database.
 */
import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startLocalNetwork, type LocalNetwork } from '@paid-api-marketplace/local-network';
import { startTestService, testNetworks, type TestService } from '../support/test-service';
import { bearer, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { toStroops } from '../../src/domain/amount';
import { asTransactionXdr, paymentCase, type FacilitatorEnv } from '../facilitator/helpers';

let network: LocalNetwork;
let svc: TestService;
let env: FacilitatorEnv;
const usdc = () => network.assets.find((a) => a.code === 'USDC')!;

beforeAll(async () => {
  network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
  svc = await startTestService({
    runJobs: true,
    jobPollMs: 100,
    localDevDomains: true,
    networks: testNetworks({
      rpcUrl: network.rpcUrl,
      assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
    }),
    facilitator: { channelAccounts: 2, pollMs: 25, confirmGraceMs: 10_000, ledgerSeconds: 0.1 },
  });
  env = { network, svc, usdc: usdc(), stop: async () => undefined };
});
afterAll(async () => {
  await svc?.stop();
  await network?.stop();
});

async function payableSeller(domain: string): Promise<SignedUpSeller> {
  const seller = await signUpSeller(svc.app, { domain });
  await network.fundAccount(seller.wallet.publicKey());
  await network.faucet(seller.wallet.publicKey(), 'USDC', '0.0000001');
  return seller;
}

const bazaar = { info: { input: { type: 'http', method: 'GET' } }, schema: { type: 'object', required: ['input'] } };

async function pay(seller: SignedUpSeller, url: string) {
  const payer = Keypair.random();
  await network.fundAccount(payer.publicKey());
  await network.faucet(payer.publicKey(), 'USDC', '1');
  const c = await paymentCase(env, payer, seller.wallet.publicKey(), '0.01');
  const accepted = {
    scheme: 'exact',
    network: 'stellar:testnet',
    asset: usdc().contractId,
    amount: toStroops('0.01').toString(),
    payTo: seller.wallet.publicKey(),
    maxTimeoutSeconds: 300,
    extra: { areFeesSponsored: true },
  };
  const res = await request(svc.app)
    .post('/x402/settle')
    .set(bearer(seller.apiKey))
    .send({
      x402Version: 2,
      paymentPayload: {
        x402Version: 2,
        resource: { url, description: 'x402 e2e' },
        accepted,
        payload: { transaction: asTransactionXdr(env, payer, c.entry) },
        extensions: { bazaar },
      },
      paymentRequirements: accepted,
    });
  expect(res.body).toMatchObject({ success: true });
}

const listed = async (payTo: string) =>
  (await request(svc.app).get('/x402/discovery/resources').query({ payTo, limit: 100 })).body.items as Array<{
    resource: string;
    metadata: Record<string, unknown>;
  }>;

describe('the Bazaar with LOCAL_DEV_DOMAINS on', () => {
  it(
    "a paid localhost URL (as x402's e2e servers use) is learned for the paid seller, listed as localDev and " +
      'unproven',
    async () => {
      const seller = await payableSeller('x402-e2e-local.example');
      for (const url of ['http://localhost:4021/protected', 'http://127.0.0.1:4022/protected-route'])
        await pay(seller, url);
      const items = await listed(seller.wallet.publicKey());
      expect(items.map((i) => i.resource).sort()).toEqual([
        'http://127.0.0.1:4022/protected-route',
        'http://localhost:4021/protected',
      ]);
      for (const i of items)
        expect(i.metadata).toMatchObject({ hostVerified: false, localDev: true, untrusted: true, sellerId: seller.id });
    },
  );

  it('a seller still cannot teach the Bazaar a public host it has not proven', async () => {
    const seller = await payableSeller('unproven-public.example');
    await pay(seller, 'https://unproven-public.example/v1/x');
    expect(await listed(seller.wallet.publicKey())).toEqual([]);
  });
});
