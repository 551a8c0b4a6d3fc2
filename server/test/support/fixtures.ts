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

export async function signUpSeller(app: Express, overrides: { domain?: string; displayName?: string } = {}): Promise<SignedUpSeller> {
  const wallet = Keypair.random();
  counter += 1;
  const domain = overrides.domain ?? `seller${counter}-${wallet.publicKey().slice(1, 7).toLowerCase()}.example.com`;
  const res = await request(app)
    .post('/v1/sellers')
    .send({ displayName: overrides.displayName ?? `Seller ${counter}`, walletAddress: wallet.publicKey(), domain });
  if (res.status !== 201) throw new Error(`sign-up failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.seller.id, apiKey: res.body.apiKey, wallet, domain };
}

export function resourceInput(seller: SignedUpSeller, overrides: Record<string, unknown> = {}) {
  return {
    sellerId: seller.id,
    type: 'http',
    name: 'Weather forecast',
    description: 'Hourly forecast for a city, paid per call',
    url: `https://${seller.domain}/v1/forecast/{city}`,
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
