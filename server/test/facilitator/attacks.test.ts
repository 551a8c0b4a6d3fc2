/**
 * Issue #18: the facilitator cannot be turned against sellers, buyers or itself. Each test is an attack a stranger
 * tried against a running service (all local simulation: the real service, database and local network with real
 * XDR and ed25519 signatures), named after the attack, asserting what the attacker sees and what the ledger and the
 * database hold afterwards.
 */
import request from 'supertest';
import { Address, Keypair, Operation, Asset, nativeToScVal, rpc, xdr } from '@stellar/stellar-sdk';
import { QueryTypes } from 'sequelize';
import { bearer, signUpSeller } from '../support/fixtures';
import { OPERATOR_KEY } from '../support/test-service';
import { toStroops } from '../../src/domain/amount';
import {
  facilitatorWorker,
  fundedBuyer,
  paymentCase,
  sellerWithResource,
  sendTransactions,
  startFacilitatorEnv,
  x402Body,
  type FacilitatorEnv,
  type PaymentCase,
} from './helpers';
import { authPayload, classicTransaction, signAuthEntry } from '../../../local-network/test/helpers';

/** The unsigned transfer(from, to, amount) entry on the env's USDC, with a fresh nonce. */
function transferEntry(env: FacilitatorEnv, from: string, to: string, amount: string): xdr.SorobanAuthorizationEntry {
  return new xdr.SorobanAuthorizationEntry({
    credentials: xdr.SorobanCredentials.sorobanCredentialsAddress(
      new xdr.SorobanAddressCredentials({
        address: new Address(from).toScAddress(),
        nonce: xdr.Int64.fromString(String(Math.floor(Math.random() * 2 ** 52))),
        signatureExpirationLedger: 0,
        signature: xdr.ScVal.scvVoid(),
      }),
    ),
    rootInvocation: new xdr.SorobanAuthorizedInvocation({
      function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
        new xdr.InvokeContractArgs({
          contractAddress: new Address(env.usdc.contractId).toScAddress(),
          functionName: 'transfer',
          args: [
            nativeToScVal(from, { type: 'address' }),
            nativeToScVal(to, { type: 'address' }),
            nativeToScVal(toStroops(amount), { type: 'i128' }),
          ],
        }),
      ),
      subInvocations: [],
    }),
  });
}

/** A /v1 payment case from an already signed entry. */
function caseOf(env: FacilitatorEnv, entry: xdr.SorobanAuthorizationEntry, payTo: string, amount: string): PaymentCase {
  const asset = { code: 'USDC', issuer: env.usdc.issuer };
  const expiresAtLedger = entry.credentials().address().signatureExpirationLedger();
  return {
    entry,
    payload: {
      scheme: 'exact',
      network: 'stellar:testnet',
      asset,
      amount,
      payTo,
      expiresAtLedger,
      authorization: { format: 'sorobanAuthorizationEntry', xdr: entry.toXDR('base64') },
    },
    requirements: { scheme: 'exact', network: 'stellar:testnet', amount, payTo, asset, maxTimeoutSeconds: 300 },
  };
}

describe('facilitator attacks (issue #18), each against the running service on the local network', () => {
  let env: FacilitatorEnv;
  const latest = () => env.network.latestLedger();
  const app = () => env.svc.app;
  const verify = (c: PaymentCase, extra: Record<string, unknown> = {}) =>
    request(app())
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, ...extra });
  const settle = (id: string, c: PaymentCase, resourceId: string) =>
    request(app()).post('/v1/settle').send({ paymentAttemptId: id, paymentPayload: c.payload, resourceId });

  beforeAll(async () => {
    // The pace of testnet and pubnet (5 s per ledger): the validity window is judged as on a real network.
    env = await startFacilitatorEnv({ facilitator: { ledgerSeconds: 5 } });
  });
  afterAll(() => env.stop());

  describe('defect 1: settle trusts an earlier verify', () => {
    it(
      "when an attacker verifies a cheap transfer to its own wallet and a victim settles it with the victim's " +
        'requirements on /x402/settle, nothing settles',
      async () => {
        const attacker = await sellerWithResource(env, '0.001');
        const victim = await sellerWithResource(env, '1');
        const attackerWallet = await fundedBuyer(env, '5');
        const c = await paymentCase(env, attackerWallet, attacker.seller.wallet.publicKey(), '0.001');
        const cheap = x402Body(env, attackerWallet, c, { amount: '0.001', payTo: attacker.seller.wallet.publicKey() });
        const verified = await request(app()).post('/x402/verify').set(bearer(attacker.seller.apiKey)).send(cheap);
        expect(verified.body).toMatchObject({ isValid: true });
        const sends = await sendTransactions(env);
        const victimSettle = x402Body(env, attackerWallet, c, { amount: '1', payTo: victim.seller.wallet.publicKey() });
        const res = await request(app()).post('/x402/settle').set(bearer(victim.seller.apiKey)).send(victimSettle);
        expect(res.body).toMatchObject({
          success: false,
          errorReason: 'invalid_exact_stellar_payload_wrong_recipient',
          transaction: '',
        });
        expect(await sendTransactions(env)).toBe(sends);
        expect(env.network.balance(attackerWallet.publicKey(), 'USDC')).toBe('5');
        // /x402/verify commits nothing (issue #29): the refused settle left no row either.
        const rows = await env.svc.db.query('SELECT status FROM payment_attempts WHERE payer = :p', {
          replacements: { p: attackerWallet.publicKey() },
          type: QueryTypes.SELECT,
        });
        expect(rows).toEqual([]);
      },
    );

    it(
      "when a payment verified for a cheap resource is settled on /v1/settle with an expensive resource's id, " +
        "settle refuses it on the expensive resource's terms",
      async () => {
        const cheap = await sellerWithResource(env, '0.001');
        const dear = await sellerWithResource(env, '2');
        const buyer = await fundedBuyer(env, '5');
        const c = await paymentCase(env, buyer, cheap.seller.wallet.publicKey(), '0.001');
        const v = await verify(c, { resourceId: cheap.resource.id });
        expect(v.status).toBe(200);
        const res = await settle(v.body.paymentAttemptId, c, dear.resource.id);
        expect(res.status).toBe(422);
        expect(['RECIPIENT_MISMATCH', 'AMOUNT_MISMATCH']).toContain(res.body.error.code);
        expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('5');
        const settlements = await env.svc.db.query('SELECT id FROM settlements WHERE payment_attempt_id = :id', {
          replacements: { id: v.body.paymentAttemptId },
          type: QueryTypes.SELECT,
        });
        expect(settlements).toEqual([]);
      },
    );
  });

  describe("defect 2: the facilitator sponsors anyone's transfers", () => {
    it(
      'when a stranger settles 1-stroop-scale transfers between two wallets it owns (no seller) on /x402/settle, ' +
        'PAYEE_NOT_SELLER: no transaction is submitted and no channel pays a fee',
      async () => {
        const a = await fundedBuyer(env, '5');
        const b = await fundedBuyer(env, '0.0000001');
        const signers = (await request(app()).get('/x402/supported')).body.signers['stellar:testnet'] as string[];
        const channelXlm = signers.map((s) => env.network.balance(s, 'XLM'));
        const sends = await sendTransactions(env);
        for (let i = 0; i < 3; i++) {
          const c = await paymentCase(env, a, b.publicKey(), '0.001');
          const res = await request(app())
            .post('/x402/settle')
            .send(x402Body(env, a, c, { amount: '0.001', payTo: b.publicKey() }, `https://stranger.example/${i}`));
          expect(res.body).toMatchObject({
            success: false,
            errorReason: 'invalid_payment_requirements',
            errorMessage: expect.stringMatching(/^PAYEE_NOT_SELLER: /),
          });
        }
        expect(await sendTransactions(env)).toBe(sends);
        expect(signers.map((s) => env.network.balance(s, 'XLM'))).toEqual(channelXlm);
        expect(env.network.balance(a.publicKey(), 'USDC')).toBe('5');
      },
    );

    it(
      "when a stranger settles an uncataloged URL paying a real seller without that seller's key (anonymous, or " +
        "another seller's key), it is refused and nothing is submitted",
      async () => {
        const target = await sellerWithResource(env, '0.5');
        const other = await signUpSeller(app());
        const buyer = await fundedBuyer(env, '5');
        const c = await paymentCase(env, buyer, target.seller.wallet.publicKey(), '0.01');
        const body = x402Body(
          env,
          buyer,
          c,
          { amount: '0.01', payTo: target.seller.wallet.publicKey() },
          'https://not-in-the-catalog.example/x',
        );
        const sends = await sendTransactions(env);
        const anonymous = await request(app()).post('/x402/settle').send(body);
        expect(anonymous.body).toMatchObject({
          success: false,
          errorMessage: expect.stringMatching(/^UNAUTHORIZED: /),
        });
        const wrongKey = await request(app()).post('/x402/settle').set(bearer(other.apiKey)).send(body);
        expect(wrongKey.body).toMatchObject({ success: false, errorMessage: expect.stringMatching(/^FORBIDDEN: /) });
        expect(await sendTransactions(env)).toBe(sends);
        expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('5');
      },
    );

    it('when the payer pays itself, SELF_PAYMENT; when the amount is dust, AMOUNT_BELOW_MINIMUM', async () => {
      const seller = await sellerWithResource(env, '0.5');
      await env.network.faucet(seller.seller.wallet.publicKey(), 'USDC', '3');
      const self = await paymentCase(env, seller.seller.wallet, seller.seller.wallet.publicKey(), '0.5');
      const selfRes = await verify(self);
      expect(selfRes.status).toBe(422);
      expect(selfRes.body.error).toMatchObject({
        code: 'SELF_PAYMENT',
        details: [expect.objectContaining({ code: 'accountability.not_self_payment' })],
      });
      const buyer = await fundedBuyer(env, '1');
      const dust = await paymentCase(env, buyer, seller.seller.wallet.publicKey(), '0.0000001');
      const dustRes = await verify(dust);
      expect(dustRes.status).toBe(422);
      expect(dustRes.body.error.code).toBe('AMOUNT_BELOW_MINIMUM');
    });
  });

  describe('defect 3: verify does not simulate (the ledger is the authority)', () => {
    const server = () => new rpc.Server(env.network.rpcUrl, { allowHttp: true });

    it(
      'when a multisig payer (medium threshold 2) signs with its master key alone, verify refuses ' +
        'INVALID_SIGNATURE; with both signers it verifies',
      async () => {
        const { seller } = await sellerWithResource(env, '0.5');
        const payer = await fundedBuyer(env, '5');
        const cosigner = Keypair.random();
        const set = await classicTransaction(
          env.network,
          server(),
          payer.publicKey(),
          [payer],
          [
            Operation.setOptions({
              signer: { ed25519PublicKey: cosigner.publicKey(), weight: 1 },
              lowThreshold: 1,
              medThreshold: 2,
              highThreshold: 2,
            }),
          ],
        );
        expect(set.final?.status).toBe('SUCCESS');
        const expiration = latest() + 50;
        const alone = signAuthEntry(
          transferEntry(env, payer.publicKey(), seller.wallet.publicKey(), '0.5'),
          [payer],
          expiration,
          env.network.networkPassphrase,
        );
        const refused = await verify(caseOf(env, alone, seller.wallet.publicKey(), '0.5'));
        expect(refused.status).toBe(422);
        expect(refused.body.error).toMatchObject({
          code: 'INVALID_SIGNATURE',
          details: [expect.objectContaining({ code: 'simulation.succeeds' })],
        });
        const both = signAuthEntry(
          transferEntry(env, payer.publicKey(), seller.wallet.publicKey(), '0.5'),
          [payer, cosigner],
          expiration,
          env.network.networkPassphrase,
        );
        expect((await verify(caseOf(env, both, seller.wallet.publicKey(), '0.5'))).status).toBe(200);
      },
    );

    it(
      "when the payer's master key is disabled, its signature is refused and the account's other signer's is " +
        'accepted',
      async () => {
        const { seller } = await sellerWithResource(env, '0.5');
        const payer = await fundedBuyer(env, '5');
        const signer = Keypair.random();
        const set = await classicTransaction(
          env.network,
          server(),
          payer.publicKey(),
          [payer],
          [Operation.setOptions({ signer: { ed25519PublicKey: signer.publicKey(), weight: 1 }, masterWeight: 0 })],
        );
        expect(set.final?.status).toBe('SUCCESS');
        const expiration = latest() + 50;
        const byMaster = signAuthEntry(
          transferEntry(env, payer.publicKey(), seller.wallet.publicKey(), '0.5'),
          [payer],
          expiration,
          env.network.networkPassphrase,
        );
        expect((await verify(caseOf(env, byMaster, seller.wallet.publicKey(), '0.5'))).body.error.code).toBe(
          'INVALID_SIGNATURE',
        );
        const bySigner = signAuthEntry(
          transferEntry(env, payer.publicKey(), seller.wallet.publicKey(), '0.5'),
          [signer],
          expiration,
          env.network.networkPassphrase,
        );
        expect((await verify(caseOf(env, bySigner, seller.wallet.publicKey(), '0.5'))).status).toBe(200);
      },
    );

    it("when the payer's trustline is frozen by the issuer, verify refuses TRUSTLINE_REQUIRED", async () => {
      const { seller } = await sellerWithResource(env, '0.5');
      const payer = await fundedBuyer(env, '5');
      await env.network.setTrustlineAuthorized(payer.publicKey(), 'USDC', false);
      const res = await verify(await paymentCase(env, payer, seller.wallet.publicKey(), '0.5'));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('TRUSTLINE_REQUIRED');
    });

    it(
      "when the payer's funds are locked as selling liabilities of an open offer, verify refuses " +
        'INSUFFICIENT_BALANCE',
      async () => {
        const { seller } = await sellerWithResource(env, '0.5');
        const payer = await fundedBuyer(env, '1');
        const offer = await classicTransaction(
          env.network,
          server(),
          payer.publicKey(),
          [payer],
          [
            Operation.manageSellOffer({
              selling: new Asset('USDC', env.usdc.issuer),
              buying: Asset.native(),
              amount: '0.8',
              price: '100',
            }),
          ],
        );
        expect(offer.final?.status).toBe('SUCCESS');
        const res = await verify(await paymentCase(env, payer, seller.wallet.publicKey(), '0.5'));
        expect(res.status).toBe(422);
        expect(res.body.error.code).toBe('INSUFFICIENT_BALANCE');
      },
    );

    it(
      'when the payer is a contract account (C...) with a valid signature, verify and settle accept it and the ' +
        'money moves',
      async () => {
        const { seller, resource } = await sellerWithResource(env, '0.5');
        const key = Keypair.random();
        const contractId = await env.network.deployContractAccount(key.publicKey());
        await env.network.faucet(contractId, 'USDC', '3');
        const entry = transferEntry(env, contractId, seller.wallet.publicKey(), '0.5');
        const expiration = latest() + 50;
        entry.credentials().address().signatureExpirationLedger(expiration);
        const payload = authPayload(entry, expiration, env.network.networkPassphrase);
        entry
          .credentials()
          .address()
          .signature(xdr.ScVal.scvBytes(key.sign(payload)));
        const c = caseOf(env, entry, seller.wallet.publicKey(), '0.5');
        const v = await verify(c, { resourceId: resource.id });
        expect(v.status).toBe(200);
        const s = await settle(v.body.paymentAttemptId, c, resource.id);
        expect(s.status).toBe(200);
        expect(env.network.balance(contractId, 'USDC')).toBe('2.5');
      },
    );
  });

  describe("defect 4: the validity window uses the network's ledger pace", () => {
    it(
      'when an authorization with maxTimeoutSeconds 3600 expires 3,599 ledgers ahead (about 5 h at 5 s), verify ' +
        'refuses it; ceil(3600/5)+2 ledgers ahead is accepted',
      async () => {
        const { seller } = await sellerWithResource(env, '0.5');
        const payer = await fundedBuyer(env, '5');
        const far = await paymentCase(env, payer, seller.wallet.publicKey(), '0.5', {
          sign: { expiration: latest() + 3599 },
          requirements: { maxTimeoutSeconds: 3600 },
        });
        const refused = await verify(far);
        expect(refused.status).toBe(400);
        expect(refused.body.error.details[0]).toMatchObject({ code: 'auth.expiry_within_window' });
        const within = await paymentCase(env, payer, seller.wallet.publicKey(), '0.5', {
          sign: { expiration: latest() + 700 },
          requirements: { maxTimeoutSeconds: 3600 },
        });
        expect((await verify(within)).status).toBe(200);
      },
    );
  });

  describe('defects 5 and 7: final answers and honest attestations', () => {
    it(
      'when a stock server settles a cataloged resource on /x402/settle, the answer is success only with the ' +
        'transfer confirmed, and the attestation names the ledger facts and the cataloged resource',
      async () => {
        const { seller, resource } = await sellerWithResource(env, '0.5');
        const buyer = await fundedBuyer(env, '5');
        const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
        const res = await request(app())
          .post('/x402/settle')
          .send(
            x402Body(
              env,
              buyer,
              c,
              { amount: '0.5', payTo: seller.wallet.publicKey() },
              resource.url.replace('{city}', 'oslo'),
            ),
          );
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ success: true });
        expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('4.5');
        const receipt = await request(app())
          .get(`/v1/receipts/${res.body.extensions.marketplace.receiptId}`)
          .set(bearer(OPERATOR_KEY));
        expect(receipt.body).toMatchObject({ status: 'settled', evidence: 'local_simulation' });
        const claims = JSON.parse(
          Buffer.from(String(res.body.extensions.marketplace.attestation).split('.')[1], 'base64url').toString(),
        );
        expect(claims).toMatchObject({
          kind: 'facilitator-attestation',
          ledger: receipt.body.ledger,
          amount: '5000000',
          payer: buyer.publicKey(),
          payTo: seller.wallet.publicKey(),
          resource: { id: resource.id, url: resource.url },
        });
      },
    );
  });
});

describe('facilitator attacks (issue #18): channels, time bounds, fees', () => {
  let env: FacilitatorEnv;
  let advanceAfterSubmit = 0;
  let crashAfterSubmit = false;
  const feeAccount = Keypair.random();
  // Ledgers close only while a test closes them (every 50 ms by default), so a test can decide what the next
  // ledger sees: the dropped-transaction test moves the clock before the first close after its submission.
  let closer: NodeJS.Timeout | null = null;
  const startClosing = () => {
    closer ??= setInterval(() => void env.network.closeLedger(), 50);
  };
  const stopClosing = () => {
    if (closer) clearInterval(closer);
    closer = null;
  };

  beforeAll(async () => {
    env = await startFacilitatorEnv({
      ledgerCloseMs: 0,
      facilitator: {
        channelAccounts: 1,
        txTimeoutSeconds: 20,
        confirmGraceMs: 2_000,
        feeAccountSecret: feeAccount.secret(),
        afterSubmit: () => {
          if (advanceAfterSubmit) {
            env.network.advanceClock(advanceAfterSubmit);
            startClosing();
          }
          if (crashAfterSubmit) throw new Error('simulated crash between submit and the confirmation');
        },
      },
    });
    await env.network.fundAccount(feeAccount.publicKey());
  });
  beforeEach(startClosing);
  afterEach(() => {
    stopClosing();
    advanceAfterSubmit = 0;
    crashAfterSubmit = false;
    env.network.setMinimumInclusionFee(100);
  });
  afterAll(() => env.stop());

  const settleCataloged = async (amount = '0.5') => {
    const { seller, resource } = await sellerWithResource(env, amount);
    const buyer = await fundedBuyer(env, '5');
    const c = await paymentCase(env, buyer, seller.wallet.publicKey(), amount);
    const v = await request(env.svc.app)
      .post('/v1/verify')
      .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId: resource.id });
    expect(v.status).toBe(200);
    const res = await request(env.svc.app)
      .post('/v1/settle')
      .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
    return { res, buyer, seller, attemptId: v.body.paymentAttemptId as string };
  };
  const channelOf = async (hash: string) =>
    (await env.svc.db.query('SELECT count(*)::int AS n FROM channel_leases WHERE transaction_hash = :hash', {
      replacements: { hash },
      plain: true,
    })) as { n: number };

  it(
    'when a fee account is configured, the settlement is fee-bumped: the fee account pays the fee and the ' +
      'channel account pays nothing',
    async () => {
      const signers = (await request(env.svc.app).get('/x402/supported')).body.signers['stellar:testnet'] as string[];
      expect(signers).toContain(feeAccount.publicKey());
      const channel = signers.find((s) => s !== feeAccount.publicKey())!;
      const channelXlm = env.network.balance(channel, 'XLM');
      const feeXlm = Number(env.network.balance(feeAccount.publicKey(), 'XLM'));
      const { res } = await settleCataloged();
      expect(res.status).toBe(200);
      expect(env.network.balance(channel, 'XLM')).toBe(channelXlm);
      expect(Number(env.network.balance(feeAccount.publicKey(), 'XLM'))).toBeLessThan(feeXlm);
    },
  );

  it(
    'when the network surges (minimum inclusion fee 5,000 stroops), the bid comes from getFeeStats and the ' +
      'settlement lands',
    async () => {
      env.network.setMinimumInclusionFee(5000);
      await env.network.closeLedger();
      const { res } = await settleCataloged();
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('settled');
    },
  );

  it(
    "when the RPC's history no longer covers a pending settlement's window, the confirmation worker marks it for " +
      'reconciliation (never failed without evidence) and frees its channel',
    async () => {
      crashAfterSubmit = true;
      const { res } = await settleCataloged();
      expect(res.status).toBe(500);
      // The submission is applied by the next ledger (the channel reaches its sequence); without this close the worker
      // could run first and rightly fail a transaction whose channel never reached its sequence.
      await env.network.closeLedger();
      const s = (await env.svc.db.query(
        'SELECT id, transaction_hash FROM settlements ORDER BY created_at DESC LIMIT 1',
        {
          plain: true,
        },
      )) as { id: string; transaction_hash: string };
      // The process stayed away longer than the RPC keeps history: the submission predates its oldest ledger.
      await env.svc.db.query(
        "UPDATE settlements SET created_at = now() - interval '30 days', valid_until = now() - interval '30 " +
          "days' + interval '20 seconds', transaction_hash = :fake WHERE id = :id",
        {
          replacements: { id: s.id, fake: 'f'.repeat(64) },
        },
      );
      await env.svc.db.query('UPDATE channel_leases SET transaction_hash = :fake WHERE transaction_hash = :hash', {
        replacements: { fake: 'f'.repeat(64), hash: s.transaction_hash },
      });
      const worker = facilitatorWorker(env, 'settlement-confirmation-worker');
      await worker.run({ olderThanSeconds: 0 });
      const after = (await env.svc.db.query('SELECT status, needs_reconciliation FROM settlements WHERE id = :id', {
        replacements: { id: s.id },
        plain: true,
      })) as Record<string, unknown>;
      expect(after).toEqual({ status: 'pending', needs_reconciliation: true });
      expect((await channelOf('f'.repeat(64))).n).toBe(0);
    },
  );
  it(
    'when the ledger never includes the transaction (a ledger closes past its time bound), settle answers ' +
      'SETTLEMENT_FAILED at once and frees the channel; the buyer keeps the money',
    async () => {
      stopClosing(); // the first ledger after the submission closes an hour later (afterSubmit moves the clock)
      advanceAfterSubmit = 3600;
      const { res, buyer } = await settleCataloged();
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe('SETTLEMENT_FAILED');
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('5');
      const s = (await env.svc.db.query(
        'SELECT transaction_hash, status FROM settlements ORDER BY created_at DESC LIMIT 1',
        { plain: true },
      )) as { transaction_hash: string; status: string };
      expect(s.status).toBe('failed');
      expect((await channelOf(s.transaction_hash)).n).toBe(0);
      const leases = await env.svc.db.query(
        'SELECT count(*)::int AS n FROM channel_leases WHERE transaction_hash IS NOT NULL OR (holder IS NOT NULL ' +
          'AND leased_until > now())',
        { plain: true },
      );
      expect(leases).toEqual({ n: 0 }); // the one channel is free again
      // (last in this block: the network clock stays an hour ahead)
    },
  );
});

describe("facilitator attacks (issue #18): a seller's fee budget", () => {
  let env: FacilitatorEnv;
  beforeAll(async () => {
    env = await startFacilitatorEnv({ facilitator: { feeBudgets: { seller: 1 } } });
  });
  afterAll(() => env.stop());

  it(
    "when a seller's daily fee budget is spent, settle answers 429 FEE_BUDGET_EXHAUSTED with Retry-After, " +
      'nothing is submitted and the payment stays verified',
    async () => {
      const { seller, resource } = await sellerWithResource(env, '0.5');
      const buyer = await fundedBuyer(env, '5');
      const c = await paymentCase(env, buyer, seller.wallet.publicKey(), '0.5');
      const v = await request(env.svc.app)
        .post('/v1/verify')
        .send({ paymentPayload: c.payload, paymentRequirements: c.requirements, resourceId: resource.id });
      expect(v.status).toBe(200);
      const sends = await sendTransactions(env);
      const res = await request(env.svc.app)
        .post('/v1/settle')
        .send({ paymentAttemptId: v.body.paymentAttemptId, paymentPayload: c.payload, resourceId: resource.id });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('FEE_BUDGET_EXHAUSTED');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(await sendTransactions(env)).toBe(sends);
      const row = (await env.svc.db.query('SELECT status FROM payment_attempts WHERE id = :id', {
        replacements: { id: v.body.paymentAttemptId },
        plain: true,
      })) as { status: string };
      expect(row.status).toBe('verified');
      expect(env.network.balance(buyer.publicKey(), 'USDC')).toBe('5');
    },
  );
});
