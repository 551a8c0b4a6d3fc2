// No secret leaves the service. The whole marketplace flow runs (seller sign-up, resource, catalog, buyer pays through
// /v1/verify + /v1/settle in both authorization formats, refusals, receipt and payment reads, workers running) with
// every log line captured (the service's logger, plus anything written to stdout/stderr), and a metrics scrape.
// Every log line, every metric line and every response not meant for its owner is searched for API keys, secret
// seeds, bearer tokens, the exact payment authorization XDR strings sent, and private JWK members.
import request from 'supertest';
import type { Keypair } from '@stellar/stellar-sdk';
import { startLocalNetwork } from '@paid-api-marketplace/local-network';
import type { Logger } from '../../src/logger';
import { OPERATOR_KEY, startTestService, testNetworks } from '../support/test-service';
import { bearer, resourceInput, signUpSeller, type SignedUpSeller } from '../support/fixtures';
import { fundedBuyer, paymentCase, sleep, type FacilitatorEnv } from '../facilitator/helpers';

const SECRET_SEED = /\bS[A-Z2-7]{55}\b/;
const API_KEY = /\bmk_[A-Za-z0-9_-]{16,}/;
const BEARER = /Bearer\s+[A-Za-z0-9_\-.~+/=]{8,}/i;
const PRIVATE_JWK = /"(d|p|q|dp|dq|qi)"\s*:\s*"[A-Za-z0-9_-]{16,}"/;

describe('no secret leaves: logs, metrics and responses of the whole flow', () => {
  const logLines: string[] = [];
  /** Responses that are not meant only for their owner's eyes: everything except the sign-up answer. */
  const responses: Array<{ what: string; text: string }> = [];
  const sentXdr: string[] = [];
  const keys: string[] = [OPERATOR_KEY];
  const seeds: string[] = [];
  let metricsText = '';
  let env: FacilitatorEnv;
  let restoreStd: () => void;

  // Debug level: every line the service can write is captured, whatever its level.
  const capture: Logger = {
    debug: (msg, fields) => logLines.push(JSON.stringify({ level: 'debug', msg, ...fields })),
    info: (msg, fields) => logLines.push(JSON.stringify({ level: 'info', msg, ...fields })),
    warn: (msg, fields) => logLines.push(JSON.stringify({ level: 'warn', msg, ...fields })),
    error: (msg, fields) => logLines.push(JSON.stringify({ level: 'error', msg, ...fields })),
  };

  async function call(what: string, req: request.Test): Promise<request.Response> {
    const res = await req;
    responses.push({ what: `${what} -> ${res.status}`, text: `${JSON.stringify(res.headers)}\n${res.text ?? ''}` });
    return res;
  }

  beforeAll(async () => {
    // Anything printed by the process while the flow runs is a log line too.
    const out = process.stdout.write.bind(process.stdout);
    const err = process.stderr.write.bind(process.stderr);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      logLines.push(String(chunk));
      return (out as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      logLines.push(String(chunk));
      return (err as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stderr.write;
    restoreStd = () => {
      process.stdout.write = out;
      process.stderr.write = err;
    };

    const network = await startLocalNetwork({ port: 0, ledgerCloseMs: 100 });
    const svc = await startTestService({
      networks: testNetworks({
        rpcUrl: network.rpcUrl,
        assets: network.assets.map((a) => ({ code: a.code, issuer: a.issuer })),
      }),
      facilitator: { channelAccounts: 2, pollMs: 25, confirmGraceMs: 10_000 },
      runJobs: true,
      jobPollMs: 100,
      logger: capture,
      // Request logging on (LOG_REQUESTS): one line per request, searched too.
      logRequests: true,
    });
    const usdc = network.assets.find((a) => a.code === 'USDC')!;
    env = {
      network,
      svc,
      usdc,
      async stop() {
        await svc.stop();
        await network.stop();
      },
    };
  }, 60_000);

  afterAll(async () => {
    await env?.stop();
    restoreStd?.();
  });

  it('runs the flow: sign-up, resource, catalog, two payments settled, refusals, every read', async () => {
    const app = env.svc.app;
    const sellerA: SignedUpSeller = await signUpSeller(app);
    const sellerB: SignedUpSeller = await signUpSeller(app);
    keys.push(sellerA.apiKey, sellerB.apiKey);
    seeds.push(sellerA.wallet.secret(), sellerB.wallet.secret());
    await env.network.fundAccount(sellerA.wallet.publicKey());
    await env.network.faucet(sellerA.wallet.publicKey(), 'USDC', '0.0000001');

    const created = await call(
      'createResource',
      request(app)
        .post('/v1/resources')
        .set(bearer(sellerA.apiKey))
        .send(resourceInput(sellerA, { assetIssuer: env.usdc.issuer, amount: '0.25' })),
    );
    expect(created.status).toBe(201);
    const resourceId = (created.body.resource ?? created.body).id as string;
    const { sellerId: _s, ...draft } = resourceInput(sellerA, { assetIssuer: env.usdc.issuer, name: 'Tide tables' });
    const cataloged = await call(
      'catalogResource',
      request(app)
        .post('/v1/discovery/catalog')
        .set(bearer(sellerA.apiKey))
        .send({ sellerId: sellerA.id, resource: draft }),
    );
    expect(cataloged.status).toBeLessThan(300);

    const buyer: Keypair = await fundedBuyer(env, '10');
    seeds.push(buyer.secret());
    const receipts: string[] = [];
    const attempts: string[] = [];
    const hashes: string[] = [];
    for (const format of ['sorobanAuthorizationEntry', 'transaction'] as const) {
      const c = await paymentCase(env, buyer, sellerA.wallet.publicKey(), '0.25', { format });
      sentXdr.push(c.payload.authorization.xdr, c.entry.toXDR('base64'));
      const verified = await call(
        `verify ${format}`,
        request(app)
          .post('/v1/verify')
          .set(bearer(sellerA.apiKey))
          .send({ paymentPayload: c.payload, paymentRequirements: c.requirements }),
      );
      expect(verified.status).toBe(200);
      const settled = await call(
        `settle ${format}`,
        request(app)
          .post('/v1/settle')
          .set(bearer(sellerA.apiKey))
          .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId }),
      );
      expect(settled.status).toBe(200);
      // A second use of the same payment is refused (or answers the same settlement): either way, no secret in it.
      await call(
        `settle again ${format}`,
        request(app)
          .post('/v1/settle')
          .send({ paymentAttemptId: verified.body.paymentAttemptId, paymentPayload: c.payload, resourceId }),
      );
      await call(
        `verify again ${format}`,
        request(app).post('/v1/verify').send({ paymentPayload: c.payload, paymentRequirements: c.requirements }),
      );
      receipts.push(settled.body.receiptId);
      attempts.push(verified.body.paymentAttemptId);
      hashes.push(settled.body.transactionHash);
    }

    // Refusals that carry a payment or a credential: wrong amount, a bad signature, a garbage and a well-formed unknown
    // key.
    const wrong = await paymentCase(env, buyer, sellerA.wallet.publicKey(), '0.5');
    sentXdr.push(wrong.payload.authorization.xdr);
    const mismatch = await call(
      'verify amount mismatch',
      request(app)
        .post('/v1/verify')
        .send({ paymentPayload: wrong.payload, paymentRequirements: { ...wrong.requirements, amount: '0.25' } }),
    );
    expect(mismatch.status).toBe(422);
    const other = await fundedBuyer(env, '0');
    seeds.push(other.secret());
    const forged = await paymentCase(env, buyer, sellerA.wallet.publicKey(), '0.25', { sign: { signer: other } });
    sentXdr.push(forged.payload.authorization.xdr);
    await call(
      'verify bad signature',
      request(app)
        .post('/v1/verify')
        .send({ paymentPayload: forged.payload, paymentRequirements: forged.requirements }),
    );
    const unknownKey = `mk_${'x'.repeat(43)}`;
    keys.push(unknownKey);
    expect((await call('unknown key', request(app).get('/v1/payments').set(bearer(unknownKey)))).status).toBe(401);
    await call('malformed bearer', request(app).get('/v1/payments').set('Authorization', `Bearer ${sellerA.apiKey}!`));
    await call('seller B reads A payment', request(app).get(`/v1/payments/${attempts[0]}`).set(bearer(sellerB.apiKey)));

    // Every read: public, by the seller, by the operator.
    for (const [i, attemptId] of attempts.entries()) {
      await call('getPayment as A', request(app).get(`/v1/payments/${attemptId}`).set(bearer(sellerA.apiKey)));
      await call('getPayment as operator', request(app).get(`/v1/payments/${attemptId}`).set(bearer(OPERATOR_KEY)));
      expect((await call('getReceipt public', request(app).get(`/v1/receipts/${receipts[i]}`))).status).toBe(200);
      expect((await call('getSettlement public', request(app).get(`/v1/settlements/${hashes[i]}`))).status).toBe(200);
    }
    await call('listPayments as A', request(app).get('/v1/payments').set(bearer(sellerA.apiKey)));
    await call('listPayments as operator', request(app).get('/v1/payments').set(bearer(OPERATOR_KEY)));
    await call(
      'listSellerPayments',
      request(app).get(`/v1/sellers/${sellerA.id}/payments`).set(bearer(sellerA.apiKey)),
    );
    await call('getSeller', request(app).get(`/v1/sellers/${sellerA.id}`));
    await call('getResource', request(app).get(`/v1/resources/${resourceId}`));
    await call('discovery', request(app).get('/v1/discovery/resources'));
    await call('search', request(app).get('/v1/discovery/search').query({ q: 'forecast' }));
    await call('health', request(app).get('/health'));
    await call('version', request(app).get('/version'));
    await call('networks', request(app).get('/v1/networks'));
    await call('supported', request(app).get('/v1/supported'));
    const jwks = await call('jwks', request(app).get('/.well-known/jwks.json'));
    if (jwks.status === 200) expect(Array.isArray(jwks.body.keys)).toBe(true);

    await sleep(500); // let the workers run a round (confirmation, indexing) so their log lines are in
    const scrape = await call('metrics', request(app).get('/metrics').set(bearer(OPERATOR_KEY)));
    expect(scrape.status).toBe(200);
    metricsText = scrape.text;
    expect(metricsText).toContain('# TYPE');
  }, 120_000);

  function leaks(text: string): string[] {
    const found: string[] = [];
    for (const k of keys) if (text.includes(k)) found.push(`API key ${k.slice(0, 6)}…`);
    for (const s of seeds) if (text.includes(s)) found.push('a known secret seed');
    for (const x of sentXdr) if (text.includes(x)) found.push(`payment authorization XDR ${x.slice(0, 12)}…`);
    const patterns: Array<[string, RegExp]> = [
      ['secret seed pattern', SECRET_SEED],
      ['API key pattern', API_KEY],
      ['bearer token', BEARER],
      ['private JWK member', PRIVATE_JWK],
    ];
    for (const [name, re] of patterns) {
      const m = re.exec(text);
      if (m) found.push(`${name}: ${m[0].slice(0, 10)}…`);
    }
    return found;
  }

  it('searched something: the flow produced log lines, metric lines, responses and secrets to look for', () => {
    expect(responses.length).toBeGreaterThan(30);
    expect(metricsText.split('\n').length).toBeGreaterThan(50);
    expect(sentXdr.length).toBeGreaterThanOrEqual(6);
    expect(keys.length).toBeGreaterThanOrEqual(4);
    // Capture is wired and logging was at its most verbose: a request line per request, debug lines of the
    // facilitator's decisions and of worker runs.
    const messages = logLines.map((l) => {
      try {
        return (JSON.parse(l) as { msg?: string }).msg ?? '';
      } catch {
        return '';
      }
    });
    expect(messages.filter((m) => m === 'request').length).toBeGreaterThanOrEqual(responses.length);
    expect(messages).toEqual(expect.arrayContaining(['facilitator outcome', 'facilitator refusal', 'job run']));
    // The search itself finds a planted secret (so a pass is not a blind pass).
    expect(leaks(`x ${keys[1]} y`)).not.toEqual([]);
    expect(leaks(`x ${sentXdr[0]} y`)).not.toEqual([]);
    expect(leaks(`{"d":"${'A'.repeat(43)}"}`)).not.toEqual([]);
  });

  it('no log line carries a key, a seed, a bearer token, a payment authorization or a private key', () => {
    const bad = logLines.flatMap((line) => leaks(line).map((l) => `${l} in log line ${line.slice(0, 160)}`));
    expect(bad).toEqual([]);
  });

  it('no metric label or value carries one', () => {
    const bad = metricsText
      .split('\n')
      .flatMap((line) => leaks(line).map((l) => `${l} in metric ${line.slice(0, 160)}`));
    expect(bad).toEqual([]);
  });

  it('no response carries one (the sign-up answer, meant for its owner, is the only place a key appears)', () => {
    const bad = responses.flatMap((r) => leaks(r.text).map((l) => `${l} in ${r.what}`));
    expect(bad).toEqual([]);
  });
});
