import {
  FeeBumpTransaction,
  Operation,
  Transaction,
  TransactionBuilder,
  extractBaseAddress,
  xdr,
} from '@stellar/stellar-sdk';

/**
 * A submitted envelope decoded once: the (inner) transaction whose source, sequence and operations run, and for
 * fee bumps the outer fee source that pays. Hashes are the network-bound transaction hashes.
 */
export interface ParsedTransaction {
  envelopeXdr: string;
  /** Hex hash of the envelope as submitted (the fee-bump hash for fee bumps). */
  hash: string;
  inner: Transaction;
  innerHash: Buffer;
  /** Base G address of the inner transaction's source. */
  source: string;
  seqNum: bigint;
  operations: Operation[];
  sorobanData?: xdr.SorobanTransactionData;
  feeBump?: { tx: FeeBumpTransaction; feeSource: string; fee: bigint };
  /** Who pays: the fee-bump fee source, else the transaction source. */
  feeSource: string;
  /** The fee bid (outer fee for fee bumps). */
  fee: bigint;
}

export function parseTransaction(envelopeXdr: string, passphrase: string): ParsedTransaction {
  const decoded = TransactionBuilder.fromXDR(envelopeXdr, passphrase);
  const feeBump = decoded instanceof FeeBumpTransaction ? decoded : undefined;
  const inner = feeBump ? feeBump.innerTransaction : (decoded as Transaction);
  const envelope = inner.toEnvelope();
  const ext = envelope.switch().name === 'envelopeTypeTx' ? envelope.v1().tx().ext() : undefined;
  const source = extractBaseAddress(inner.source);
  const feeSource = feeBump ? extractBaseAddress(feeBump.feeSource) : source;
  return {
    envelopeXdr,
    hash: decoded.hash().toString('hex'),
    inner,
    innerHash: inner.hash(),
    source,
    seqNum: BigInt(inner.sequence),
    operations: inner.operations,
    sorobanData: ext && ext.switch() === 1 ? ext.sorobanData() : undefined,
    feeBump: feeBump ? { tx: feeBump, feeSource, fee: BigInt(feeBump.fee) } : undefined,
    feeSource,
    fee: BigInt(decoded.fee),
  };
}

/** Base G address of an operation's effective source. */
export function operationSource(tx: ParsedTransaction, op: Operation): string {
  return op.source ? extractBaseAddress(op.source) : tx.source;
}

export function isSorobanOperation(op: Operation): boolean {
  return op.type === 'invokeHostFunction' || op.type === 'extendFootprintTtl' || op.type === 'restoreFootprint';
}
