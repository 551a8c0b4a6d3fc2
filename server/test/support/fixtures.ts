import crypto from 'node:crypto';
import request from 'supertest';
import type { Express } from 'express';
import { Keypair } from '@stellar/stellar-sdk';
import { DEFAULT_USDC_ISSUER } from '../../src/config';

export interface SignedUpSeller {
  id: string;
  apiKey: string;
  wallet: Keypair;
  domain: string;
}

let counter = 0;

export async function signUpSeller(
  app: Express,
  overrides: { domain?: string; displayName?: string } = {},
): Promise<SignedUpSeller> {
  const wallet = Keypair.random();
  counter += 1;
  const domain = overrides.domain ?? `seller${counter}-${wallet.publicKey().slice(1, 7).toLowerCase()}.example.com`;
  const proof = await walletProof(app, wallet);
  const res = await postHonouringRateLimit(app, '/v1/sellers', {
    displayName: overrides.displayName ?? `Seller ${counter}`,
    walletAddress: wallet.publicKey(),
    domain,
    walletProof: proof,
  });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.seller.id, apiKey: res.body.apiKey, wallet, domain };
}

/** Sign-up takes two requests: suites that run with a tiny rate limit wait out a 429 (Retry-After) and retry. */
async function postHonouringRateLimit(app: Express, path: string, body: object) {
  for (let attempt = 0; ; attempt += 1) {
    const res = await request(app).post(path).send(body);
    if (res.status !== 429 || attempt >= 3) return res;
    await new Promise((r) => setTimeout(r, Number(res.headers['retry-after'] ?? 1) * 1000));
  }
}

/** The wallet's SEP-53 signature of a message: ed25519 over SHA-256("Stellar Signed Message:\n" + message), base64. */
export function signMessage(wallet: Keypair, message: string): string {
  return wallet
    .sign(crypto.createHash('sha256').update(`Stellar Signed Message:\n${message}`, 'utf8').digest())
    .toString('base64');
}

/** Asks for a sign-up challenge for the wallet and signs it: the `walletProof` of POST /v1/sellers. */
export async function walletProof(app: Express, wallet: Keypair): Promise<{ challengeId: string; signature: string }> {
  const res = await postHonouringRateLimit(app, '/v1/sellers/challenges', { walletAddress: wallet.publicKey() });
  if (res.status !== 201) throw new Error(`challenge failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { challengeId: res.body.challengeId, signature: signMessage(wallet, res.body.message) };
}

/**
 * A seller lists a method and URL once (409 DUPLICATE_RESOURCE otherwise), so every call for the same seller gets
 * its own host: the seller's domain the first time, then r2.<domain>, r3.<domain>... (subdomains are the seller's).
 */
const listings = new Map<string, number>();

export function resourceInput(seller: SignedUpSeller, overrides: Record<string, unknown> = {}) {
  const n = (listings.get(seller.id) ?? 0) + 1;
  listings.set(seller.id, n);
  const host = n === 1 ? seller.domain : `r${n}.${seller.domain}`;
  return {
    sellerId: seller.id,
    type: 'http',
    name: 'Weather forecast',
    description: 'Hourly forecast for a city, paid per call',
    url: `https://${host}/v1/forecast/{city}`,
    routeTemplate: '/v1/forecast/{city}',
    network: 'stellar:testnet',
    payTo: seller.wallet.publicKey(),
    assetCode: 'USDC',
    assetIssuer: DEFAULT_USDC_ISSUER['stellar:testnet'],
    amount: '0.01',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    outputSchema: { type: 'object', properties: { temperatureC: { type: 'number' } } },
    extensions: { bazaar: { discoverable: true } },
    ...overrides,
  };
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
