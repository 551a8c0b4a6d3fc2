import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, ApiError } from '../src';
import { startServer, type RunningServer } from '../../test/support/sdk-server';

describe('seller client: API keys (create, list, revoke) against the real server', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it(
    'creates a payments key (secret once), lists it without the ' + 'secret, and a revoked key is refused with 401',
    async () => {
      const created = await createSellerClient({ baseUrl: server.baseUrl }).sellers.signUp({
        displayName: 'Keys',
        domain: 'keys.example.com',
        wallet: Keypair.random(),
      });
      const admin = createSellerClient({ baseUrl: server.baseUrl, apiKey: created.apiKey });
      const key = await admin.keys.create(created.seller.id, { name: 'paywall', scope: 'payments' });
      expect(key).toMatchObject({
        name: 'paywall',
        scope: 'payments',
        revokedAt: null,
        secret: expect.stringMatching(/^mk_/),
      });
      const listed = await admin.keys.list(created.seller.id);
      expect(listed.map((k) => [k.name, k.scope])).toEqual([
        ['paywall', 'payments'],
        ['initial', 'admin'],
      ]);
      expect(JSON.stringify(listed)).not.toContain(key.secret);

      const paywall = admin.withApiKey(key.secret);
      await expect(paywall.payments.list()).resolves.toMatchObject({ items: [] });
      const forbidden = (await paywall.keys.list(created.seller.id).catch((e: unknown) => e)) as ApiError;
      expect(forbidden).toMatchObject({ status: 403, code: 'FORBIDDEN' });

      const revoked = await admin.keys.revoke(created.seller.id, key.id);
      expect(revoked.revokedAt).toEqual(expect.any(String));
      const refused = (await paywall.payments.list().catch((e: unknown) => e)) as ApiError;
      expect(refused).toBeInstanceOf(ApiError);
      expect(refused).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    },
  );
});
