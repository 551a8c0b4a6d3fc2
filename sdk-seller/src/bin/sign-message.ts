#!/usr/bin/env node
/**
 * paid-api-marketplace-sign-message: the SEP-53 signature of a sign-up challenge, for the REST route (curl cannot
 * sign). The wallet's secret comes from the environment only (never an argument: arguments show in `ps` and shell
 * history); the message is the first argument, or stdin when there is none. Prints the base64 signature, nothing else.
 *
 *   SELLER_WALLET_SECRET=S... npx paid-api-marketplace-sign-message "$(jq -r .message challenge.json)"
 *
 * Exit 2 with one line on stderr (never the secret) when the secret is missing or malformed.
 */
import { Keypair } from '@stellar/stellar-sdk';
import { signMessage } from '../index.js';

function fail(message: string): never {
  process.stderr.write(`paid-api-marketplace-sign-message: ${message}\n`);
  process.exit(2);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\n$/, '');
}

async function main(): Promise<void> {
  const secret = process.env.SELLER_WALLET_SECRET?.trim();
  if (!secret)
    fail("set SELLER_WALLET_SECRET to the wallet's secret seed (S...); the message is the first argument or stdin");
  let keypair: Keypair;
  try {
    keypair = Keypair.fromSecret(secret);
  } catch {
    fail('SELLER_WALLET_SECRET is not a Stellar secret seed (S..., 56 characters)'); // the value is never printed
  }
  const message = process.argv.length > 2 ? process.argv[2] : await readStdin();
  if (!message) fail('no message: pass the challenge message as the first argument or on stdin');
  process.stdout.write(`${signMessage(keypair, message)}\n`);
}

main().catch((err: unknown) => fail((err as Error).message));
