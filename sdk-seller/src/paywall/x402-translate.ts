/**
 * Payment payloads the paywall accepts, turned into our facilitator's PaymentPayload:
 *
 * - ours (sent by the buyer SDK): `{ scheme, network, asset, amount, payTo, expiresAtLedger, authorization }`,
 *   passed through (unknown fields dropped);
 * - the stock x402 `exact` Stellar payload (sent by `@x402/fetch` with `@x402/stellar`): `{ x402Version,
 *   accepted, payload: { transaction: <base64 TransactionEnvelope> } }`. The signed transfer authorization is
 *   inside the envelope; the facilitator takes it out (format `transaction`). `expiresAtLedger` and `payer` are
 *   read from the entry's address credentials; the terms (asset, amount, payTo) are the paywall's requirements,
 *   which the facilitator checks against the signed transfer.
 */
import { Address, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import type { components } from '../generated/openapi.js';

type PaymentPayload = components['schemas']['PaymentPayload'];
type Requirements = components['schemas']['ResourcePaymentRequirements'];

export class PayloadError extends Error {
  readonly code = 'INVALID_PAYMENT_PAYLOAD';
}

const PASSPHRASES: Record<string, string> = {
  'stellar:testnet': 'Test SDF Network ; September 2015',
  'stellar:pubnet': 'Public Global Stellar Network ; September 2015',
};

export function decodePaymentHeader(value: string): Record<string, unknown> {
  try {
    const doc = JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as unknown;
    if (!doc || typeof doc !== 'object') throw new Error('not an object');
    return doc as Record<string, unknown>;
  } catch {
    throw new PayloadError('The payment header is not base64 JSON');
  }
}

export function toFacilitatorPayload(doc: Record<string, unknown>, requirements: Requirements): PaymentPayload {
  const x402Version = typeof doc.x402Version === 'number' ? doc.x402Version : undefined;
  if (doc.authorization && typeof doc.authorization === 'object') {
    const a = doc.authorization as Record<string, unknown>;
    return {
      ...(x402Version ? { x402Version } : {}),
      scheme: 'exact',
      network: doc.network as PaymentPayload['network'],
      asset: doc.asset as PaymentPayload['asset'],
      amount: doc.amount as string,
      payTo: doc.payTo as string,
      expiresAtLedger: doc.expiresAtLedger as number,
      authorization: {
        format: a.format as 'sorobanAuthorizationEntry',
        xdr: a.xdr as string,
        ...(typeof a.payer === 'string' ? { payer: a.payer } : {}),
      },
    };
  }
  const inner = doc.payload as { transaction?: unknown } | undefined;
  if (inner && typeof inner.transaction === 'string') {
    const accepted = (doc.accepted ?? {}) as { network?: string };
    const network = (accepted.network ?? requirements.network) as string;
    const passphrase = PASSPHRASES[network];
    if (!passphrase) throw new PayloadError(`Unsupported network ${network}`);
    const { payer, expiresAtLedger } = readAddressCredentials(inner.transaction, passphrase);
    return {
      ...(x402Version ? { x402Version } : {}),
      scheme: 'exact',
      network: network as PaymentPayload['network'],
      asset: { code: requirements.asset.code, issuer: requirements.asset.issuer },
      amount: requirements.amount,
      payTo: requirements.payTo,
      expiresAtLedger,
      authorization: { format: 'transaction', xdr: inner.transaction, payer },
    };
  }
  throw new PayloadError('The payment header holds neither an authorization nor an x402 exact transaction');
}

/** The payer and expiration ledger of the first address-credential auth entry of the envelope's invokeHostFunction. */
function readAddressCredentials(
  transactionXdr: string,
  passphrase: string,
): { payer: string; expiresAtLedger: number } {
  let tx;
  try {
    tx = TransactionBuilder.fromXDR(transactionXdr, passphrase);
  } catch {
    throw new PayloadError('The x402 transaction is not a valid TransactionEnvelope');
  }
  const ops = 'innerTransaction' in tx ? tx.innerTransaction.operations : tx.operations;
  for (const op of ops) {
    if (op.type !== 'invokeHostFunction') continue;
    for (const entry of (op.auth ?? []) as xdr.SorobanAuthorizationEntry[]) {
      const creds = entry.credentials();
      if (creds.switch() !== xdr.SorobanCredentialsType.sorobanCredentialsAddress()) continue;
      const address = creds.address();
      return {
        payer: Address.fromScAddress(address.address()).toString(),
        expiresAtLedger: address.signatureExpirationLedger(),
      };
    }
  }
  throw new PayloadError('The x402 transaction carries no signed address authorization');
}
