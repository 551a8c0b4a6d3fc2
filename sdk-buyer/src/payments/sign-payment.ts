/**
 * Builds and signs the payment authorization of the x402 `exact` scheme on Stellar: a SorobanAuthorizationEntry
 * with address credentials of the payer for the asset contract's `transfer(from, to, amount)` (amount: i128
 * stroops; contract: the asset's Stellar Asset Contract), a random nonce, and
 * `signatureExpirationLedger = latest ledger + ledgers`. Signed with `authorizeEntry` by a Keypair or by a signer
 * callback (a wallet), never by sending a secret anywhere.
 */
import crypto from 'node:crypto';
import { Address, Keypair, authorizeEntry, nativeToScVal, xdr, type SigningCallback } from '@stellar/stellar-sdk';
import { latestLedgerOf } from '../core/soroban-rpc.js';
import { PASSPHRASES, assertAssetShown, type NormalizedRequirements, type StellarNetwork } from './requirements.js';

/** A Keypair with its secret, or a wallet: its public key and a callback signing the authorization preimage. */
export type PaymentSigner = Keypair | { publicKey: string; sign: SigningCallback };

/** Our facilitator's PaymentPayload (openapi/components/schemas/PaymentPayload.yaml). */
export interface PaymentPayload {
  /** The x402 version of the exchange: 2 (PAYMENT-SIGNATURE) or 1 (X-PAYMENT). */
  x402Version: 1 | 2;
  scheme: 'exact';
  network: StellarNetwork;
  asset: { code: string; issuer: string };
  amount: string;
  payTo: string;
  expiresAtLedger: number;
  authorization: { format: 'sorobanAuthorizationEntry'; xdr: string; payer: string };
}

export interface SignPaymentOptions {
  signer: PaymentSigner;
  /** Soroban RPC of the network, used for the latest ledger (unless `latestLedger` is given). */
  rpcUrl?: string;
  /** Skip the RPC call: the ledger sequence to count from. */
  latestLedger?: number;
  /** How many ledgers the authorization stays valid. Default 60 (about 5 minutes), capped by maxTimeoutSeconds. */
  validForLedgers?: number;
}

export const DEFAULT_VALID_FOR_LEDGERS = 60;
const SECONDS_PER_LEDGER = 5;

export function signerPublicKey(signer: PaymentSigner): string {
  return signer instanceof Keypair ? signer.publicKey() : signer.publicKey;
}

/** The unsigned entry: address credentials of `from`, root invocation transfer(from, to, amount), no sub-invocations.
 * */
export function transferAuthorizationEntry(
  contractId: string,
  from: string,
  to: string,
  stroops: bigint,
): xdr.SorobanAuthorizationEntry {
  const nonce = xdr.Int64.fromString(
    BigInt.asIntN(64, BigInt('0x' + crypto.randomBytes(8).toString('hex'))).toString(),
  );
  return new xdr.SorobanAuthorizationEntry({
    credentials: xdr.SorobanCredentials.sorobanCredentialsAddress(
      new xdr.SorobanAddressCredentials({
        address: new Address(from).toScAddress(),
        nonce,
        signatureExpirationLedger: 0,
        signature: xdr.ScVal.scvVoid(),
      }),
    ),
    rootInvocation: new xdr.SorobanAuthorizedInvocation({
      function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
        new xdr.InvokeContractArgs({
          contractAddress: new Address(contractId).toScAddress(),
          functionName: 'transfer',
          args: [new Address(from).toScVal(), new Address(to).toScVal(), nativeToScVal(stroops, { type: 'i128' })],
        }),
      ),
      subInvocations: [],
    }),
  });
}

/** Signs a payment meeting `requirements` and returns our facilitator's PaymentPayload. */
export async function signPayment(
  requirements: NormalizedRequirements,
  options: SignPaymentOptions,
): Promise<PaymentPayload> {
  if (!requirements.asset.code || !requirements.asset.issuer)
    throw new Error('The payment requirements name no asset code and issuer');
  assertAssetShown(requirements);
  const latest = options.latestLedger ?? (options.rpcUrl ? await latestLedgerOf(options.rpcUrl) : undefined);
  if (latest === undefined) throw new Error(`No Soroban RPC URL for ${requirements.network}: pass rpcUrl`);
  let ledgers = options.validForLedgers ?? DEFAULT_VALID_FOR_LEDGERS;
  if (requirements.maxTimeoutSeconds)
    ledgers = Math.max(1, Math.min(ledgers, Math.floor(requirements.maxTimeoutSeconds / SECONDS_PER_LEDGER)));
  const expiresAtLedger = latest + ledgers;
  const payer = signerPublicKey(options.signer);
  const entry = transferAuthorizationEntry(
    requirements.asset.contractId,
    payer,
    requirements.payTo,
    requirements.stroops,
  );
  const signer = options.signer instanceof Keypair ? options.signer : options.signer.sign;
  const signed = await authorizeEntry(entry, signer, expiresAtLedger, PASSPHRASES[requirements.network]);
  return {
    x402Version: requirements.x402Version,
    scheme: 'exact',
    network: requirements.network,
    asset: { code: requirements.asset.code, issuer: requirements.asset.issuer },
    amount: requirements.amount,
    payTo: requirements.payTo,
    expiresAtLedger,
    authorization: { format: 'sorobanAuthorizationEntry', xdr: signed.toXDR('base64'), payer },
  };
}
