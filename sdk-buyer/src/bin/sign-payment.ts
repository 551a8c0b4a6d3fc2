#!/usr/bin/env node
/**
 * paid-api-marketplace-sign-payment: the body of `POST /v1/verify` for a listed resource, signed by the buyer's
 * wallet, for the REST route (curl cannot build a Soroban authorization). It reads the resource's terms
 * (`GET /v1/resources/{id}`), signs an x402 `exact` payment for exactly those terms (valid for 60 ledgers), and
 * prints `{ x402Version, paymentPayload, paymentRequirements, resourceId }` as one JSON line. It calls nothing else:
 * you send it to verify (and its `paymentPayload` to settle) yourself.
 *
 *   BUYER_WALLET_SECRET=S... MARKETPLACE_URL=http://127.0.0.1:3000 npx paid-api-marketplace-sign-payment res_...
 *
 * The secret comes from the environment only (never an argument); exit 2 with one line on stderr (never the secret).
 */
import { Keypair } from '@stellar/stellar-sdk';
import { createBuyerClient } from '../index.js';

function fail(message: string): never {
  process.stderr.write(`paid-api-marketplace-sign-payment: ${message}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  const secret = process.env.BUYER_WALLET_SECRET?.trim();
  const resourceId = process.argv[2];
  if (!secret || !resourceId)
    fail('usage: BUYER_WALLET_SECRET=S... [MARKETPLACE_URL=...] paid-api-marketplace-sign-payment <resourceId>');
  let signer: Keypair;
  try {
    signer = Keypair.fromSecret(secret);
  } catch {
    fail('BUYER_WALLET_SECRET is not a Stellar secret seed (S..., 56 characters)');
  }
  const buyer = createBuyerClient({
    baseUrl: process.env.MARKETPLACE_URL ?? 'http://127.0.0.1:3000',
    payment: { signer },
  });
  const resource = await buyer.resources.get(resourceId);
  const r = resource.paymentRequirements;
  const paymentPayload = await buyer.signPayment(r);
  const paymentRequirements = {
    scheme: r.scheme,
    network: r.network,
    amount: r.amount,
    payTo: r.payTo,
    asset: { code: r.asset.code, issuer: r.asset.issuer },
    maxTimeoutSeconds: r.maxTimeoutSeconds,
    resource: r.resource,
  };
  process.stdout.write(
    `${JSON.stringify({ x402Version: paymentPayload.x402Version, paymentPayload, paymentRequirements, resourceId })}\n`,
  );
}

main().catch((err: unknown) => fail((err as Error).message));
