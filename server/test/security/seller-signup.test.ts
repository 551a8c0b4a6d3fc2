import request from 'supertest';
import { Keypair } from '@stellar/stellar-sdk';
import { startTestService, type TestService } from '../support/test-service';
import { signMessage, walletProof } from '../support/fixtures';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

const signUp = (body: Record<string, unknown>, idempotencyKey?: string) => {
  const req = request(svc.app).post('/v1/sellers');
  if (idempotencyKey) req.set('Idempotency-Key', idempotencyKey);
  return req.send(body);
};
const seller = (wallet: Keypair, extra: Record<string, unknown> = {}) => ({
  displayName: 'Squatter',
  walletAddress: wallet.publicKey(),
  domain: 'squat.example.com',
  ...extra,
});
async function sellersWithWallet(wallet: Keypair): Promise<number> {
  const [[row]] = (await svc.db.query(
    `SELECT count(*)::int AS n FROM sellers WHERE wallet_address = '${wallet.publicKey()}'`,
  )) as [Array<{ n: number }>, unknown];
  return row.n;
}

describe('wallet squatting: sign-up proves control of the wallet', () => {
  it('sign-up without a wallet proof is refused with 400 INVALID_REQUEST naming walletProof', async () => {
    const victim = Keypair.random();
    const res = await signUp(seller(victim));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(JSON.stringify(res.body.error.details)).toContain('walletProof');
    expect(await sellersWithWallet(victim)).toBe(0);
  });

  it(
    "an attacker who signs the victim's challenge with its own " + 'key is refused with 422 INVALID_SIGNATURE',
    async () => {
      const victim = Keypair.random();
      const attacker = Keypair.random();
      const challenge = await request(svc.app)
        .post('/v1/sellers/challenges')
        .send({ walletAddress: victim.publicKey() });
      expect(challenge.status).toBe(201);
      const res = await signUp(
        seller(victim, {
          walletProof: {
            challengeId: challenge.body.challengeId,
            signature: signMessage(attacker, challenge.body.message),
          },
        }),
      );
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('INVALID_SIGNATURE');
      expect(await sellersWithWallet(victim)).toBe(0);
    },
  );

  it(
    "a proof made for the attacker's own wallet does not " + "register the victim's wallet (422 INVALID_SIGNATURE)",
    async () => {
      const victim = Keypair.random();
      const attacker = Keypair.random();
      const proof = await walletProof(svc.app, attacker);
      const res = await signUp(seller(victim, { walletProof: proof }));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('INVALID_SIGNATURE');
      expect(await sellersWithWallet(victim)).toBe(0);
    },
  );

  it('a signature of a different message (not the SEP-53 digest of the challenge) is refused', async () => {
    const wallet = Keypair.random();
    const challenge = await request(svc.app).post('/v1/sellers/challenges').send({ walletAddress: wallet.publicKey() });
    const raw = wallet.sign(Buffer.from(challenge.body.message, 'utf8')).toString('base64');
    const res = await signUp(
      seller(wallet, { walletProof: { challengeId: challenge.body.challengeId, signature: raw } }),
    );
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('INVALID_SIGNATURE');
  });

  it('a reused proof is refused with 409 REPLAY_DETECTED, even for another domain', async () => {
    const wallet = Keypair.random();
    const proof = await walletProof(svc.app, wallet);
    expect((await signUp(seller(wallet, { walletProof: proof }))).status).toBe(201);
    await svc.db.query(`DELETE FROM sellers WHERE wallet_address = '${wallet.publicKey()}'`).catch(() => undefined);
    const again = await signUp(seller(wallet, { domain: 'other.example.com', walletProof: proof }));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('REPLAY_DETECTED');
  });

  it('an expired challenge is refused with 422 AUTH_EXPIRED', async () => {
    const wallet = Keypair.random();
    const proof = await walletProof(svc.app, wallet);
    await svc.db.query(
      `UPDATE seller_wallet_challenges SET expires_at = now() - interval '1 second' WHERE id = '${proof.challengeId}'`,
    );
    const res = await signUp(seller(wallet, { walletProof: proof }));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('AUTH_EXPIRED');
    expect(await sellersWithWallet(wallet)).toBe(0);
  });

  it('an unknown challenge is refused with 422 AUTH_EXPIRED', async () => {
    const wallet = Keypair.random();
    const res = await signUp(
      seller(wallet, {
        walletProof: { challengeId: `wch_${'x'.repeat(32)}`, signature: signMessage(wallet, 'anything') },
      }),
    );
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('AUTH_EXPIRED');
  });

  it(
    'a valid proof signs up, and the challenge names the ' + 'wallet, the nonce and an expiry a few minutes away',
    async () => {
      const wallet = Keypair.random();
      const challenge = await request(svc.app)
        .post('/v1/sellers/challenges')
        .send({ walletAddress: wallet.publicKey() });
      expect(challenge.body.message).toContain(wallet.publicKey());
      expect(challenge.body.message).toContain(challenge.body.challengeId);
      const ttl = Date.parse(challenge.body.expiresAt) - Date.now();
      expect(ttl).toBeGreaterThan(60_000);
      expect(ttl).toBeLessThanOrEqual(6 * 60_000);
      const res = await signUp(
        seller(wallet, {
          walletProof: {
            challengeId: challenge.body.challengeId,
            signature: signMessage(wallet, challenge.body.message),
          },
        }),
      );
      expect(res.status).toBe(201);
      expect(res.body.seller.walletAddress).toBe(wallet.publicKey());
      expect(await sellersWithWallet(wallet)).toBe(1);
    },
  );

  it('concurrent sign-ups with one proof create at most one seller', async () => {
    const wallet = Keypair.random();
    const proof = await walletProof(svc.app, wallet);
    const results = await Promise.all(
      ['a', 'b', 'c', 'd'].map((d) => signUp(seller(wallet, { domain: `${d}.example.com`, walletProof: proof }))),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(await sellersWithWallet(wallet)).toBe(1);
  });
});

describe('seller API key stored in plain text for replay', () => {
  it('the idempotency table never contains the new API key, and a replay never returns it', async () => {
    const wallet = Keypair.random();
    const body = seller(wallet, { walletProof: await walletProof(svc.app, wallet) });
    const first = await signUp(body, 'signup-replay-0001');
    expect(first.status).toBe(201);
    const apiKey: string = first.body.apiKey;
    const [rows] = await svc.db.query(
      `SELECT response_body::text AS body FROM idempotency_keys WHERE key = 'signup-replay-0001'`,
    );
    expect(rows).toHaveLength(1);
    const [all] = await svc.db.query(
      `SELECT count(*)::int AS n FROM idempotency_keys WHERE response_body::text LIKE '%mk_%'`,
    );
    expect(all).toEqual([{ n: 0 }]);
    expect(JSON.stringify(rows)).not.toContain(apiKey);
    const replay = await signUp(body, 'signup-replay-0001');
    expect(replay.status).toBe(409);
    expect(replay.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(replay.body.error.details).toEqual([{ field: 'sellerId', message: first.body.seller.id }]);
    expect(JSON.stringify(replay.body)).not.toContain(apiKey);
    expect(replay.body).not.toHaveProperty('apiKey');
  });
});
