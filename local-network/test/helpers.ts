import {
  Account,
  Asset,
  BASE_FEE,
  Contract,
  FeeBumpTransaction,
  Keypair,
  Operation,
  Transaction,
  TransactionBuilder,
  authorizeEntry,
  hash,
  nativeToScVal,
  rpc,
  xdr,
} from '@stellar/stellar-sdk';
import { LocalNetwork, LocalNetworkOptions, startLocalNetwork } from '../src';

/** A network on a free port whose ledgers close only when the test says so. */
export function startTestNetwork(opts: LocalNetworkOptions = {}): Promise<LocalNetwork> {
  return startLocalNetwork({ port: 0, ledgerCloseMs: 0, ...opts });
}

export function rpcClient(network: LocalNetwork): rpc.Server {
  return new rpc.Server(network.rpcUrl, { allowHttp: true });
}

/** A funded account holding `usdc` of the network's USDC (trustline included). */
export async function fundedAccount(network: LocalNetwork, usdc = '100'): Promise<Keypair> {
  const keypair = Keypair.random();
  await network.fundAccount(keypair.publicKey());
  if (usdc !== '0') await network.faucet(keypair.publicKey(), 'USDC', usdc);
  return keypair;
}

/** Runs `work` while closing a ledger every `everyMs`, like a running network, for clients that poll. */
export async function whileLedgersClose<T>(network: LocalNetwork, work: Promise<T>, everyMs = 50): Promise<T> {
  const timer = setInterval(() => void network.closeLedger(), everyMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

export interface TransferOptions {
  network: LocalNetwork;
  server: rpc.Server;
  /** Signs and pays the fee; the transaction source. */
  submitter: Keypair;
  /** The `from` of the transfer; when it differs from the submitter its auth entry is signed by `authSigner`. */
  from: string;
  to: string;
  /** Stroops. */
  amount: bigint;
  asset?: string;
  /** Key that signs the address-credential auth entry (default: the `from` keypair must be passed here). */
  authSigner?: Keypair;
  /** Several keys sign the address-credential auth entry (a multisig account): the signature vec is sorted by key. */
  authSigners?: Keypair[];
  /** Signs the address-credential entry any other way (a contract account's signature). */
  signAuth?: (entry: xdr.SorobanAuthorizationEntry, expiration: number) => xdr.SorobanAuthorizationEntry;
  /** Signature expiration ledger (default latest + 20). */
  expiration?: number;
  /** Inclusion fee bid per operation, stroops (default BASE_FEE); the declared resource fee is added to it. */
  fee?: string;
}

/** Builds a SAC transfer the way wallets do: simulate, sign the auth entry, assemble, sign the transaction. */
export async function buildTransfer(opts: TransferOptions): Promise<Transaction> {
  const asset = opts.network.assets.find((a) => a.code === (opts.asset ?? 'USDC'));
  const contractId = asset ? asset.contractId : Asset.native().contractId(opts.network.networkPassphrase);
  const op = new Contract(contractId).call(
    'transfer',
    nativeToScVal(opts.from, { type: 'address' }),
    nativeToScVal(opts.to, { type: 'address' }),
    nativeToScVal(opts.amount, { type: 'i128' }),
  );
  const account = await opts.server.getAccount(opts.submitter.publicKey());
  const draft = new TransactionBuilder(account, { fee: BASE_FEE, networkPassphrase: opts.network.networkPassphrase })
    .addOperation(op)
    .setTimeout(60)
    .build();
  const sim = await opts.server.simulateTransaction(draft);
  if (!rpc.Api.isSimulationSuccess(sim)) throw new Error(`simulation failed: ${sim.error}`);
  const expiration = opts.expiration ?? opts.network.latestLedger() + 20;
  const auth = await Promise.all(
    (sim.result?.auth ?? []).map((entry) => {
      if (entry.credentials().switch().name !== 'sorobanCredentialsAddress') return entry;
      if (opts.signAuth) return opts.signAuth(entry, expiration);
      if (opts.authSigners) return signAuthEntry(entry, opts.authSigners, expiration, opts.network.networkPassphrase);
      return opts.authSigner
        ? authorizeEntry(entry, opts.authSigner, expiration, opts.network.networkPassphrase)
        : entry;
    }),
  );
  const invoke = draft.operations[0] as Operation.InvokeHostFunction;
  const tx = new TransactionBuilder(
    new Account(account.accountId(), (BigInt(account.sequenceNumber()) - 1n).toString()),
    {
      fee: opts.fee ?? BASE_FEE,
      networkPassphrase: opts.network.networkPassphrase,
    },
  )
    .setSorobanData(sim.transactionData.build())
    .addOperation(Operation.invokeHostFunction({ func: invoke.func, auth }))
    .setTimeout(60)
    .build();
  tx.sign(opts.submitter);
  return tx;
}

/** Sends, closes one ledger, and returns the final getTransaction answer. */
export async function submitAndClose(network: LocalNetwork, server: rpc.Server, tx: Transaction | FeeBumpTransaction) {
  const sent = await server.sendTransaction(tx);
  if (sent.status !== 'PENDING') throw new Error(`expected PENDING, got ${sent.status}`);
  await network.closeLedger();
  return server.getTransaction(sent.hash);
}

/** The result code name of a transaction result (inner result for fee bumps). */
export function resultCode(result: xdr.TransactionResult): string {
  return result.result().switch().name;
}

/** The sha256 payload an address credential's signature covers (what __check_auth receives). */
export function authPayload(entry: xdr.SorobanAuthorizationEntry, expiration: number, passphrase: string): Buffer {
  const creds = entry.credentials().address();
  const preimage = xdr.HashIdPreimage.envelopeTypeSorobanAuthorization(
    new xdr.HashIdPreimageSorobanAuthorization({
      networkId: hash(Buffer.from(passphrase)),
      nonce: creds.nonce(),
      signatureExpirationLedger: expiration,
      invocation: entry.rootInvocation(),
    }),
  );
  return hash(preimage.toXDR());
}

/** A copy of `entry` with the expiration set and `signature` as its credential's signature ScVal. */
export function withAuthSignature(
  entry: xdr.SorobanAuthorizationEntry,
  expiration: number,
  signature: xdr.ScVal,
): xdr.SorobanAuthorizationEntry {
  const copy = xdr.SorobanAuthorizationEntry.fromXDR(entry.toXDR());
  copy.credentials().address().signatureExpirationLedger(expiration);
  copy.credentials().address().signature(signature);
  return copy;
}

/**
 * Signs a G account's address credential with several keys, as multisig wallets do: a vec of
 * {public_key: bytes, signature: bytes} maps sorted by public key (pass `unsorted` to keep the given order).
 */
export function signAuthEntry(
  entry: xdr.SorobanAuthorizationEntry,
  signers: Keypair[],
  expiration: number,
  passphrase: string,
  unsorted = false,
) {
  const payload = authPayload(entry, expiration, passphrase);
  const ordered = unsorted ? signers : [...signers].sort((a, b) => Buffer.compare(a.rawPublicKey(), b.rawPublicKey()));
  const signatures = ordered.map((k) =>
    xdr.ScVal.scvMap([
      new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('public_key'), val: xdr.ScVal.scvBytes(k.rawPublicKey()) }),
      new xdr.ScMapEntry({ key: xdr.ScVal.scvSymbol('signature'), val: xdr.ScVal.scvBytes(k.sign(payload)) }),
    ]),
  );
  return withAuthSignature(entry, expiration, xdr.ScVal.scvVec(signatures));
}

/** Builds, signs with `signers` and submits a classic transaction from `source`; returns the final answer. */
export async function classicTransaction(
  network: LocalNetwork,
  server: rpc.Server,
  source: string,
  signers: Keypair[],
  operations: xdr.Operation[],
) {
  const account = await server.getAccount(source);
  const builder = new TransactionBuilder(account, {
    fee: BASE_FEE,
    networkPassphrase: network.networkPassphrase,
  }).setTimeout(60);
  operations.forEach((op) => builder.addOperation(op));
  const tx = builder.build();
  signers.forEach((k) => tx.sign(k));
  const sent = await server.sendTransaction(tx);
  if (sent.status !== 'PENDING') return { sent, final: undefined };
  await network.closeLedger();
  return { sent, final: await server.getTransaction(sent.hash) };
}
