import { xdr } from '@stellar/stellar-sdk';
import { availableNative } from './balances';
import { SignatureRequirement, checkSignatureWeights, operationThreshold } from './account-signers';
import { LedgerView, getAccount } from './ledger-state';
import { resourceFeeOf } from './resource-fee';
import { ParsedTransaction, isSorobanOperation, operationSource } from './transaction-envelope';
import { TxCode, feeBumpResult, transactionResult } from './transaction-results';

/**
 * The checks stellar-core runs before a transaction may enter a ledger (and again when it is applied):
 * operations present, Soroban shape, time and ledger bounds, source account, sequence number (current + 1),
 * fee (base fee per operation plus the declared resource fee), declared resource fee covering the declared
 * resources, signatures (signer weights against the source's low threshold and each operation source's
 * threshold; none extra), and the fee source's spendable balance.
 */

export interface ValidationContext {
  view: LedgerView;
  /** Close time (unix seconds) of the ledger the transaction would be applied in. */
  closeTime: number;
  /** Sequence of the ledger the transaction would be applied in. */
  ledgerSeq: number;
  /** The network's current minimum inclusion fee per operation (base fee, raised by surge pricing). */
  minInclusionFee: bigint;
  /** The Soroban lane's own minimum, when higher (the pubnet fee profile): Soroban transactions pay the larger. */
  sorobanMinInclusionFee?: bigint;
}

/** The minimum inclusion fee per operation a transaction must bid: Soroban transactions have their own lane. */
function minimumFor(tx: ParsedTransaction, ctx: ValidationContext): bigint {
  const soroban = ctx.sorobanMinInclusionFee ?? 0n;
  return tx.sorobanData && soroban > ctx.minInclusionFee ? soroban : ctx.minInclusionFee;
}

export type Validation = { ok: true; feeCharged: bigint } | { ok: false; result: xdr.TransactionResult };

/**
 * The fee the network charges: the current minimum inclusion fee per operation (one more for a fee bump) plus
 * the declared resource fee. A transaction bidding less is refused with txInsufficientFee (whose feeCharged
 * tells the client this minimum, as stellar-core does).
 */
export function feeToCharge(tx: ParsedTransaction, minInclusionFee: bigint): bigint {
  const operations = BigInt(tx.operations.length + (tx.feeBump ? 1 : 0));
  return minInclusionFee * operations + resourceFeeDeclared(tx);
}

function resourceFeeDeclared(tx: ParsedTransaction): bigint {
  return tx.sorobanData ? BigInt(tx.sorobanData.resourceFee().toString()) : 0n;
}

/** The inclusion fee a transaction bids per operation: (fee - declared resource fee) / operations. */
export function inclusionFeePerOperation(tx: ParsedTransaction): bigint {
  const operations = BigInt(tx.operations.length + (tx.feeBump ? 1 : 0));
  return operations === 0n ? 0n : (tx.fee - resourceFeeDeclared(tx)) / operations;
}

function checkBounds(tx: ParsedTransaction, ctx: ValidationContext): TxCode | null {
  const { timeBounds, ledgerBounds } = tx.inner;
  if (timeBounds) {
    if (Number(timeBounds.minTime) > ctx.closeTime) return 'txTooEarly';
    if (Number(timeBounds.maxTime) !== 0 && Number(timeBounds.maxTime) < ctx.closeTime) return 'txTooLate';
  }
  if (ledgerBounds) {
    if (ledgerBounds.minLedger > ctx.ledgerSeq) return 'txTooEarly';
    if (ledgerBounds.maxLedger !== 0 && ledgerBounds.maxLedger <= ctx.ledgerSeq) return 'txTooLate';
  }
  return null;
}

function checkShape(tx: ParsedTransaction): TxCode | null {
  if (tx.operations.length === 0) return 'txMissingOperation';
  const soroban = tx.operations.some(isSorobanOperation);
  if (soroban && (tx.operations.length !== 1 || !tx.sorobanData)) return 'txMalformed';
  if (!soroban && tx.sorobanData) return 'txMalformed';
  return null;
}

function checkInner(tx: ParsedTransaction, ctx: ValidationContext, feeCharged: bigint): TxCode | null {
  const shape = checkShape(tx);
  if (shape) return shape;
  const bounds = checkBounds(tx, ctx);
  if (bounds) return bounds;
  const source = getAccount(ctx.view, tx.source);
  if (!source) return 'txNoAccount';
  if (tx.seqNum !== source.seqNum + 1n) return 'txBadSeq';
  if (!tx.feeBump && tx.fee < feeCharged) return 'txInsufficientFee';
  if (tx.sorobanData && BigInt(tx.sorobanData.resourceFee().toString()) < resourceFeeOf(tx.sorobanData.resources())) {
    return 'txSorobanInvalid';
  }
  const required: SignatureRequirement[] = [
    { account: tx.source, level: 'low' },
    ...tx.operations.map((op): SignatureRequirement => ({
      account: operationSource(tx, op),
      level: operationThreshold(op),
    })),
  ];
  const signatures = checkSignatureWeights(ctx.view, tx.innerHash, tx.inner.signatures, required);
  if (signatures === 'missing') return 'txBadAuth';
  if (signatures === 'extra') return 'txBadAuthExtra';
  if (!tx.feeBump && availableNative(source) < feeCharged) return 'txInsufficientBalance';
  return null;
}

/**
 * stellar-core: a fee bump must bid at least the inner transaction's inclusion fee rate, i.e.
 * outer inclusion fee x inner operations >= inner inclusion fee x (inner operations + 1).
 */
function outbidsInner(tx: ParsedTransaction): boolean {
  const operations = BigInt(tx.operations.length);
  const resourceFee = resourceFeeDeclared(tx);
  const outer = tx.fee - resourceFee;
  const inner = BigInt(tx.inner.fee) - resourceFee;
  return outer * operations >= inner * (operations + 1n);
}

function checkFeeBump(tx: ParsedTransaction, ctx: ValidationContext, feeCharged: bigint): TxCode | null {
  if (!tx.feeBump) return null;
  const feeSource = getAccount(ctx.view, tx.feeBump.feeSource);
  if (!feeSource) return 'txNoAccount';
  if (tx.feeBump.fee < feeCharged || !outbidsInner(tx)) return 'txInsufficientFee';
  const signatures = checkSignatureWeights(ctx.view, tx.feeBump.tx.hash(), tx.feeBump.tx.signatures, [
    { account: tx.feeBump.feeSource, level: 'low' },
  ]);
  if (signatures === 'missing') return 'txBadAuth';
  if (signatures === 'extra') return 'txBadAuthExtra';
  if (availableNative(feeSource) < feeCharged) return 'txInsufficientBalance';
  return null;
}

export function validateTransaction(tx: ParsedTransaction, ctx: ValidationContext): Validation {
  const feeCharged = feeToCharge(tx, minimumFor(tx, ctx));
  const outer = checkFeeBump(tx, ctx, feeCharged);
  if (outer) return { ok: false, result: transactionResult(feeCharged, { kind: 'code', code: outer }) };
  const inner = checkInner(tx, ctx, feeCharged);
  if (inner) {
    const outcome = { kind: 'code', code: inner } as const;
    return {
      ok: false,
      result: tx.feeBump ? feeBumpResult(feeCharged, tx.innerHash, outcome) : transactionResult(feeCharged, outcome),
    };
  }
  return { ok: true, feeCharged };
}
