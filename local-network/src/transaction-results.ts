import { xdr } from '@stellar/stellar-sdk';

/** Builders for real TransactionResult XDR, including the fee-bump wrapping. */

/** Transaction-level codes that carry no operation results. */
export type TxCode =
  | 'txTooEarly'
  | 'txTooLate'
  | 'txMissingOperation'
  | 'txBadSeq'
  | 'txBadAuth'
  | 'txInsufficientBalance'
  | 'txNoAccount'
  | 'txInsufficientFee'
  | 'txBadAuthExtra'
  | 'txInternalError'
  | 'txNotSupported'
  | 'txMalformed'
  | 'txSorobanInvalid';

/** The outcome of a (possibly inner) transaction before wrapping. */
export type InnerOutcome =
  { kind: 'code'; code: TxCode } | { kind: 'ops'; success: boolean; results: xdr.OperationResult[] };

const i64 = (value: bigint): xdr.Int64 => xdr.Int64.fromString(value.toString());

function plainResult(outcome: InnerOutcome): xdr.TransactionResultResult {
  if (outcome.kind === 'code') return xdr.TransactionResultResult[outcome.code]();
  return outcome.success
    ? xdr.TransactionResultResult.txSuccess(outcome.results)
    : xdr.TransactionResultResult.txFailed(outcome.results);
}

function innerResult(outcome: InnerOutcome): xdr.InnerTransactionResultResult {
  if (outcome.kind === 'code') return xdr.InnerTransactionResultResult[outcome.code]();
  return outcome.success
    ? xdr.InnerTransactionResultResult.txSuccess(outcome.results)
    : xdr.InnerTransactionResultResult.txFailed(outcome.results);
}

export function isSuccess(outcome: InnerOutcome): boolean {
  return outcome.kind === 'ops' && outcome.success;
}

/** A plain transaction's result. */
export function transactionResult(feeCharged: bigint, outcome: InnerOutcome): xdr.TransactionResult {
  return new xdr.TransactionResult({
    feeCharged: i64(feeCharged),
    result: plainResult(outcome),
    ext: new xdr.TransactionResultExt(0),
  });
}

/** A fee-bump result: the outer fee source pays; the inner result reports feeCharged 0. */
export function feeBumpResult(feeCharged: bigint, innerHash: Buffer, outcome: InnerOutcome): xdr.TransactionResult {
  const pair = new xdr.InnerTransactionResultPair({
    transactionHash: innerHash,
    result: new xdr.InnerTransactionResult({
      feeCharged: i64(0n),
      result: innerResult(outcome),
      ext: new xdr.InnerTransactionResultExt(0),
    }),
  });
  const result = isSuccess(outcome)
    ? xdr.TransactionResultResult.txFeeBumpInnerSuccess(pair)
    : xdr.TransactionResultResult.txFeeBumpInnerFailed(pair);
  return new xdr.TransactionResult({ feeCharged: i64(feeCharged), result, ext: new xdr.TransactionResultExt(0) });
}

/** An operation-level failure that is not an inner result (opNoAccount, opNotSupported, ...). */
export function operationCodeResult(code: 'opBadAuth' | 'opNoAccount' | 'opNotSupported'): xdr.OperationResult {
  return xdr.OperationResult[code]();
}
