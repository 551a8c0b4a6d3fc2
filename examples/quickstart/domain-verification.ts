/**
 * `npm run quickstart:domain`: the second walk-through, a seller proving it controls its domain, completed on one
 * machine. It needs the marketplace started in its local-development mode for domains (off by default):
 *
 *   LOCAL_DEV_DOMAINS=true npm start
 *
 * In that mode a seller domain under `.test` is checked over http on 127.0.0.1:LOCAL_DEV_DOMAINS_PORT (default
 * 8402), where this script serves the verification file. On a real domain the same file is served at
 * https://<your domain>/.well-known/marketplace-verification.txt (or use stellar.toml or a DNS TXT record).
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { createSellerClient, ApiError } from '@paid-api-marketplace/sdk-seller';
import { fundWallet, step } from './local-dev';

const baseUrl = process.env.MARKETPLACE_URL ?? 'http://127.0.0.1:3000';
const port = Number(process.env.LOCAL_DEV_DOMAINS_PORT ?? 8402);

async function main(): Promise<void> {
  const wallet = Keypair.random();
  const domain = `shop-${wallet.publicKey().slice(1, 7).toLowerCase()}.test`;
  step(
    1,
    `Fund a seller wallet and sign up with the domain ${domain}`,
    'local network: GET /friendbot, POST /faucet; sellers.signUp: POST /v1/sellers/challenges, POST /v1/sellers',
  );
  await fundWallet(wallet.publicKey(), '0.0000001');
  const signup = createSellerClient({ baseUrl });
  const { seller: me, apiKey } = await signup.sellers.signUp({ displayName: 'Quickstart Shop', domain, wallet });
  const seller = signup.withApiKey(apiKey);
  console.log(`    seller ${me.id}, domain ${me.domain}, status: ${me.verificationStatus}`);

  step(
    2,
    'Ask for a domain verification challenge: a token to publish',
    `sellers.verifyDomain: POST /v1/sellers/${me.id}/verify-domain {}`,
  );
  const challenge = await seller.sellers.verifyDomain(me.id, {});
  const wellKnown = challenge.methods.find((m) => m.method === 'https_well_known')!;
  console.log(`    token ${challenge.token}; publish it at ${wellKnown.location}`);

  step(
    3,
    `Serve the token from the seller's app on 127.0.0.1:${port} (what ${domain} means in local-development mode)`,
    'none (your server): GET /.well-known/marketplace-verification.txt',
  );
  const app = express();
  app.get('/.well-known/marketplace-verification.txt', (_req, res) => {
    res.type('text/plain').send(`${challenge.token}\n`);
  });
  const server = await new Promise<import('node:http').Server>((resolve, reject) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s)).on('error', reject);
  });
  console.log(`    listening on 127.0.0.1:${(server.address() as AddressInfo).port}`);

  try {
    step(
      4,
      'Ask the marketplace to check it',
      `sellers.verifyDomain: POST /v1/sellers/${me.id}/verify-domain {"method":"https_well_known"}`,
    );
    const checked = await seller.sellers.verifyDomain(me.id, { method: 'https_well_known' });
    console.log(`    status: ${checked.status}${checked.failureReason ? `, reason: ${checked.failureReason}` : ''}`);
    if (checked.status !== 'verified') {
      throw new Error(
        checked.failureReason?.startsWith('insecure_url') || checked.failureReason?.startsWith('dns_failure')
          ? 'the marketplace is not in local-development mode: restart it with LOCAL_DEV_DOMAINS=true npm start'
          : `verification failed: ${checked.failureReason}`,
      );
    }

    step(5, 'Read the public seller profile', `sellers.get: GET /v1/sellers/${me.id}`);
    const profile = await seller.sellers.get(me.id);
    console.log(
      `    domain ${profile.domain}, status: ${profile.verificationStatus}, verified at ${profile.domainVerifiedAt}`,
    );
    console.log('\nDone: the domain is verified (local development mode; local simulation).');
  } finally {
    server.close();
    server.closeAllConnections();
  }
}

main().catch((err: unknown) => {
  if (err instanceof ApiError) console.error(`\nquickstart:domain failed: ${err.status} ${err.code}: ${err.message}`);
  else console.error(`\nquickstart:domain failed: ${(err as Error).message}`);
  process.exit(1);
});
