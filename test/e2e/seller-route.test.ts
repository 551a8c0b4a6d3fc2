/**
 * Issue 32, the seller route, as a newcomer takes it: both SDKs packed (`npm pack`) and installed with express into
 * an empty project, then a seller script and a buyer script written from the READMEs alone, against a real
 * `npm start`. Each trap of the issue is met on the way and says what to do: `localhost` refused naming the `*.test`
 * rule, a price below the facilitator's minimum refused in USDC, the trustline warning on create, a mistyped
 * payments key failing at the seller (buyers would read "the seller is misconfigured"), and the buyer paying the
 * `*.test` seller with the exported `localDevFetch`. Local simulation.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runIn } from '../support/pack';
import { startMain, type StartedMain } from '../support/main-process';

const ROOT = path.resolve(__dirname, '../..');

const SCRIPT = String.raw`
const express = require('express');
const { Keypair } = require('@stellar/stellar-sdk');
const { createSellerClient, paywall, localDevFetch: sellerLocalDevFetch } = require('@paid-api-marketplace/sdk-seller');
const { createBuyerClient, localDevFetch } = require('@paid-api-marketplace/sdk-buyer');
const baseUrl = process.env.MARKETPLACE_URL;
const L = process.env.LOCAL_NETWORK_URL;
const out = {};
const fund = async (address, usdc) => {
  await fetch(L + '/friendbot?addr=' + address);
  if (usdc) await fetch(L + '/faucet', { method: 'POST', headers: { 'content-type': 'application/json' }, body:
    JSON.stringify({ address, asset: 'USDC', amount: usdc }) });
};
(async () => {
  const wallet = Keypair.random();
  await fund(wallet.publicKey(), null); // an account without a USDC trustline yet
  const signup = createSellerClient({ baseUrl });
  try { await signup.sellers.signUp({ displayName: 'Mine', domain: 'localhost', wallet }); } catch (e) { out.localhost
    = e.details.map((d) => d.message).join(' | '); }
  const { seller: me, apiKey } = await signup.sellers.signUp({ displayName: 'Mine', domain: 'my-shop.test', wallet });
  const seller = signup.withApiKey(apiKey);
  const usdc = (await seller.networks.list()).items[0].assets.find((a) => a.code === 'USDC');
  const app = express();
  const server = await new Promise((r) => { const s = app.listen(0, '127.0.0.1', () => r(s)); });
  const url = 'http://my-shop.test:' + server.address().port + '/v1/forecast/{city}';
  const draft = { sellerId: me.id, type: 'http', name: 'My forecast', description: 'Hourly forecast', url,
    routeTemplate: '/v1/forecast/{city}', network: 'stellar:testnet', payTo: me.walletAddress, assetCode: 'USDC',
    assetIssuer: usdc.issuer, amount: '0.00001', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } };
  try { await seller.resources.create(draft); } catch (e) { out.tooCheap = e.details.map((d) =>
    d.message).join(' | '); }
  const resource = await seller.resources.create({ ...draft, amount: '0.01' });
  out.warnings = resource.warnings.map((w) => w.code + ' ' + w.field);
  await fund(wallet.publicKey(), '0.0000001'); // the faucet adds the trustline
  const typo = paywall({ client: createSellerClient({ baseUrl, apiKey:
    'mk_mistyped-key-000000000000000000000000000000' }), resourceId: resource.id, onMisconfigured: () => undefined });
  try { await typo.ready(); } catch (e) { out.typo = e.name + ': ' + e.message.slice(0, 120); }
  const paymentsKey = await seller.keys.create(me.id, { name: 'paywall', scope: 'payments' });
  const pay = paywall({ client: createSellerClient({ baseUrl, apiKey: paymentsKey.secret }), resourceId: resource.id });
  await pay.ready();
  app.get('/v1/forecast/:city', pay, (req, res) => res.json({ city: req.params.city, temperatureC: 20 }));
  const target = url.replace('{city}', 'Porto');
  out.unpaid = (await sellerLocalDevFetch(target)).status;
  const buyerWallet = Keypair.random();
  await fund(buyerWallet.publicKey(), '1');
  const buyer = createBuyerClient({ baseUrl, fetch: localDevFetch, payment: { signer: buyerWallet, budget: { perCall:
    '0.05' } } });
  const paid = await buyer.payAndFetch(target);
  out.paid = { paid: paid.paid, status: paid.response.status, body: await paid.response.json(), receipt: paid.receipt
    && paid.receipt.status };
  server.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('the seller route from packed SDKs in an empty project', () => {
  let main: StartedMain;
  let dir: string;
  beforeAll(async () => {
    main = await startMain();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seller-route-'));
    const env = {
      ...process.env,
      npm_config_loglevel: 'error',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };
    for (const pkg of ['sdk-buyer', 'sdk-seller'])
      execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], {
        cwd: path.join(ROOT, pkg),
        env,
        stdio: 'ignore',
      });
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'my-seller', version: '1.0.0', private: true }),
    );
    const tarballs = fs.readdirSync(dir).filter((f) => f.endsWith('.tgz'));
    const install = (mode: string) =>
      execFileSync(
        'npm',
        [
          'install',
          mode,
          '--no-audit',
          ...tarballs.map((t) => `./${t}`),
          'express@5.3.0',
          '@stellar/stellar-sdk@14.6.1',
        ],
        { cwd: dir, env, stdio: 'ignore', timeout: 240_000 },
      );
    try {
      install('--offline');
    } catch {
      install('--prefer-offline');
    }
  }, 400_000);
  afterAll(async () => {
    await main?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it(
    'sign-up, create, paywall and a paid call: every trap says ' + 'what to do, and the buyer pays the *.test seller',
    async () => {
      const out = JSON.parse(
        await runIn(dir, 'seller.cjs', SCRIPT, {
          MARKETPLACE_URL: main.baseUrl,
          LOCAL_NETWORK_URL: main.localNetworkUrl,
        }),
      );
      expect(out.localhost).toMatch(/\.test.*LOCAL_DEV_DOMAINS=true/);
      expect(out.tooCheap).toContain('must be at least 0.0001 USDC');
      // the readiness warning first; a local seller is plain http
      expect(out.warnings).toEqual(['TRUSTLINE_REQUIRED payTo', 'CATALOG_VALIDATION_FAILED url']);
      expect(out.typo).toMatch(/^PaywallConfigurationError: .*refused this paywall's API key/);
      expect(out.unpaid).toBe(402);
      expect(out.paid).toEqual({
        paid: true,
        status: 200,
        body: { city: 'Porto', temperatureC: 20 },
        receipt: 'settled',
      });
    },
    240_000,
  );
});
