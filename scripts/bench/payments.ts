/**
 * Signed x402 `exact` payments on the local network, built in the bench process (before any clock starts):
 *   - ours: the body of POST /v1/verify (a Soroban authorization entry for USDC `transfer`, signed by the buyer);
 *   - stock: the @x402/stellar exact payload (a transaction XDR with the buyer-signed authorization entry), built
 *     with the same steps as the stock client `ExactStellarScheme.createPaymentPayload` (AssembledTransaction.build,
 *     signAuthEntries, re-simulate). The stock client itself cannot be used as is: its AssembledTransaction refuses
 *     plain-HTTP RPC URLs and it asks Horizon on the internet for the ledger close time; the benches stay on loopback.
 */
import crypto from 'node:crypto';
import { Address, Keypair, contract, hash, nativeToScVal, xdr } from '@stellar/stellar-sdk';
import type { NetworkAsset, NetworkProcess } from './processes';

export interface Buyer {
  keypair: Keypair;
}

/** Funds `n` buyers on the network (XLM from friendbot, then `usdc` USDC with a trustline), `parallel` at a time. */
export async function fundBuyers(net: NetworkProcess, n: number, usdc: string, parallel = 8): Promise<Keypair[]> {
  const buyers = Array.from({ length: n }, () => Keypair.random());
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < buyers.length) {
        const b = buyers[next++];
        await net.fund(b.publicKey());
        await net.faucet(b.publicKey(), 'USDC', usdc);
      }
    }),
  );
  return buyers;
}

/**
 * Signs with node:crypto's Ed25519 (OpenSSL): the SDK's authorizeInvocation draws its nonce from a JavaScript
 * Ed25519 key generation and re-verifies the signature in JavaScript, ~4 ms per payload on this machine. The entry
 * built here is byte-for-byte what authorizeEntry builds (same preimage, same signature map), in ~0.1 ms.
 */
function privateKey(buyer: Keypair): crypto.KeyObject {
  return crypto.createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), buyer.rawSecretKey()]),
    format: 'der',
    type: 'pkcs8',
  });
}
const keys = new WeakMap<Keypair, crypto.KeyObject>();
const invocations = new Map<string, xdr.SorobanAuthorizedInvocation>();

/**
 * Funded accounts for the service's settlement channels on a network process (pass the secrets to
 * startServiceProcess as STELLAR_TESTNET_CHANNEL_SECRETS, comma-separated): bench:settle's channel pool.
 */
export async function channelSecrets(net: NetworkProcess, n: number): Promise<string[]> {
  const keys = Array.from({ length: n }, () => Keypair.random());
  await Promise.all(keys.map((k) => net.fund(k.publicKey())));
  return keys.map((k) => k.secret());
}

export interface VerifyBody {
  paymentPayload: Record<string, unknown>;
  paymentRequirements: Record<string, unknown>;
  resourceId?: string;
}

/** The POST /v1/verify body paying `stroops` of `asset` from `buyer` to `payTo`, valid until `expiration`. */
export async function signedVerifyBody(opts: {
  passphrase: string;
  asset: NetworkAsset;
  buyer: Keypair;
  payTo: string;
  stroops: bigint;
  amount: string;
  expiration: number;
  resourceId?: string;
  /** One bit of the signature flipped: a payload every offline check passes except the signature's. */
  corruptSignature?: boolean;
}): Promise<VerifyBody> {
  let key = keys.get(opts.buyer);
  if (!key) keys.set(opts.buyer, (key = privateKey(opts.buyer)));
  const nonce = xdr.Int64.fromString(crypto.randomBytes(8).readBigInt64BE().toString());
  const invocationKey = `${opts.buyer.publicKey()}>${opts.payTo}:${opts.stroops}:${opts.asset.contractId}`;
  const invocation =
    invocations.get(invocationKey) ??
    new xdr.SorobanAuthorizedInvocation({
      function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
        new xdr.InvokeContractArgs({
          contractAddress: new Address(opts.asset.contractId).toScAddress(),
          functionName: 'transfer',
          args: [
            nativeToScVal(opts.buyer.publicKey(), { type: 'address' }),
            nativeToScVal(opts.payTo, { type: 'address' }),
            nativeToScVal(opts.stroops, { type: 'i128' }),
          ],
        }),
      ),
      subInvocations: [],
    });
  invocations.set(invocationKey, invocation);
  const preimage = xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
    new xdr.HashIdPreimageSorobanAuthorization({
      networkId: hash(Buffer.from(opts.passphrase)),
      nonce,
      signatureExpirationLedger: opts.expiration,
      invocation,
    }),
  );
  const signature = crypto.sign(null, hash(preimage.toXDR()), key);
  if (opts.corruptSignature) signature[0] ^= 1;
  const entry = new xdr.SorobanAuthorizationEntry({
    credentials: xdr.SorobanCredentials.sorobanCredentialsAddress(
      new xdr.SorobanAddressCredentials({
        address: new Address(opts.buyer.publicKey()).toScAddress(),
        nonce,
        signatureExpirationLedger: opts.expiration,
        signature: xdr.ScVal.scvVec([
          xdr.ScVal.scvMap([
            new xdr.ScMapEntry({
              key: xdr.ScVal.scvSymbol('public_key'),
              val: xdr.ScVal.scvBytes(opts.buyer.rawPublicKey()),
            }),
            new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('signature'), val: xdr.ScVal.scvBytes(signature) }),
          ]),
        ]),
      }),
    ),
    rootInvocation: invocation,
  });
  const asset = { code: opts.asset.code, issuer: opts.asset.issuer };
  return {
    paymentPayload: {
      scheme: 'exact',
      network: 'stellar:testnet',
      asset,
      amount: opts.amount,
      payTo: opts.payTo,
      expiresAtLedger: opts.expiration,
      authorization: { format: 'sorobanAuthorizationEntry', xdr: entry.toXDR('base64') },
    },
    paymentRequirements: { scheme: 'exact', network: 'stellar:testnet', amount: opts.amount, payTo: opts.payTo, asset },
    ...(opts.resourceId ? { resourceId: opts.resourceId } : {}),
  };
}

export interface StockRequirements {
  scheme: 'exact';
  network: 'stellar:testnet';
  asset: string;
  amount: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: { areFeesSponsored: true };
}

/** A stock x402 v2 exact payload for `requirements`, signed by `buyer` (see the file comment). */
export async function stockPayload(
  net: NetworkProcess,
  buyer: Keypair,
  requirements: StockRequirements,
  maxLedger: number,
): Promise<Record<string, unknown>> {
  const signer = contract.basicNodeSigner(buyer, net.passphrase);
  const tx = await contract.AssembledTransaction.build({
    contractId: requirements.asset,
    method: 'transfer',
    args: [
      nativeToScVal(buyer.publicKey(), { type: 'address' }),
      nativeToScVal(requirements.payTo, { type: 'address' }),
      nativeToScVal(requirements.amount, { type: 'i128' }),
    ],
    networkPassphrase: net.passphrase,
    rpcUrl: net.rpcUrl,
    allowHttp: true,
    parseResultXdr: (result: xdr.ScVal) => result,
  });
  const missing = tx.needsNonInvokerSigningBy();
  if (missing.length !== 1 || missing[0] !== buyer.publicKey())
    throw new Error(`expected to sign with ${buyer.publicKey()}, got [${missing.join(', ')}]`);
  await tx.signAuthEntries({ address: buyer.publicKey(), signAuthEntry: signer.signAuthEntry, expiration: maxLedger });
  await tx.simulate();
  if (tx.needsNonInvokerSigningBy().length > 0) throw new Error('unexpected signers left after signing');
  return { x402Version: 2, payload: { transaction: tx.built!.toXDR() }, accepted: requirements };
}
