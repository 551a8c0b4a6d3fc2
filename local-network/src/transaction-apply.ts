import { xdr } from '@stellar/stellar-sdk';
import { AssetRegistry } from './asset-registry';
import { errorDiagnostic, feeEvent } from './contract-events';
import { LedgerOverlay, LedgerView, entryKey, getAccount } from './ledger-state';
import { OperationOutcome, applyOperation } from './operation-apply';
import { ParsedTransaction } from './transaction-envelope';
import { InnerOutcome, feeBumpResult, transactionResult } from './transaction-results';
import { validateTransaction } from './transaction-validate';

/**
 * Applies one accepted transaction when its ledger closes, as stellar-core does: re-check validity, charge the
 * fee and consume the sequence number (kept even when an operation fails), apply the operations all-or-nothing,
 * and produce the real TransactionResult and TransactionMeta (v4: per-operation events, Soroban return value,
 * the fee event).
 */

export interface ApplyContext {
  store: LedgerView;
  registry: AssetRegistry;
  passphrase: string;
  networkId: Buffer;
  ledgerSeq: number;
  closeTime: number;
  /** Minimum inclusion fee per operation in force for this ledger (and the Soroban lane's, when higher). */
  minInclusionFee: bigint;
  sorobanMinInclusionFee?: bigint;
}

export interface AppliedTransaction {
  /** DROPPED: no longer valid for this ledger (stellar-core removes it from the queue; nothing is recorded). */
  status: 'SUCCESS' | 'FAILED' | 'DROPPED';
  result: xdr.TransactionResult;
  meta: xdr.TransactionMeta;
  /** Contract events per operation (empty when the transaction failed). */
  contractEvents: xdr.ContractEvent[][];
  transactionEvents: xdr.TransactionEvent[];
  diagnosticEvents: xdr.DiagnosticEvent[];
}

function buildMeta(
  tx: ParsedTransaction,
  outcomes: OperationOutcome[],
  success: boolean,
  transactionEvents: xdr.TransactionEvent[],
  diagnosticEvents: xdr.DiagnosticEvent[],
): xdr.TransactionMeta {
  const operations = outcomes.map(
    (o) => new xdr.OperationMetaV2({ ext: new xdr.ExtensionPoint(0), changes: [], events: success ? o.events : [] }),
  );
  const sorobanMeta = tx.sorobanData
    ? new xdr.SorobanTransactionMetaV2({
        ext: new xdr.SorobanTransactionMetaExt(0),
        returnValue: success ? (outcomes[0]?.returnValue ?? null) : null,
      })
    : null;
  return new xdr.TransactionMeta(
    4,
    new xdr.TransactionMetaV4({
      ext: new xdr.ExtensionPoint(0),
      txChangesBefore: [],
      operations,
      txChangesAfter: [],
      sorobanMeta,
      events: transactionEvents,
      diagnosticEvents,
    }),
  );
}

function chargeFeeAndSequence(store: LedgerView, tx: ParsedTransaction, fee: bigint, ledgerSeq: number): void {
  const payer = getAccount(store, tx.feeSource);
  if (payer)
    store.set(entryKey.account(tx.feeSource), { ...payer, balance: payer.balance - fee, lastModified: ledgerSeq });
  const source = getAccount(store, tx.source);
  if (source) store.set(entryKey.account(tx.source), { ...source, seqNum: tx.seqNum, lastModified: ledgerSeq });
}

export function applyTransaction(ctx: ApplyContext, tx: ParsedTransaction): AppliedTransaction {
  const validation = validateTransaction(tx, {
    view: ctx.store,
    closeTime: ctx.closeTime,
    ledgerSeq: ctx.ledgerSeq,
    minInclusionFee: ctx.minInclusionFee,
    sorobanMinInclusionFee: ctx.sorobanMinInclusionFee,
  });
  if (!validation.ok) {
    return {
      status: 'DROPPED',
      result: validation.result,
      meta: buildMeta(tx, [], false, [], []),
      contractEvents: [],
      transactionEvents: [],
      diagnosticEvents: [],
    };
  }
  const fee = validation.feeCharged;
  chargeFeeAndSequence(ctx.store, tx, fee, ctx.ledgerSeq);
  const nativeContractId = ctx.registry.require('XLM').contractId;
  const transactionEvents = [
    new xdr.TransactionEvent({
      stage: xdr.TransactionEventStage.transactionEventStageBeforeAllTxes(),
      event: feeEvent(nativeContractId, tx.feeSource, fee),
    }),
  ];

  const view = new LedgerOverlay(ctx.store);
  const opCtx = {
    view,
    registry: ctx.registry,
    passphrase: ctx.passphrase,
    networkId: ctx.networkId,
    ledgerSeq: ctx.ledgerSeq,
    tx,
  };
  const outcomes = tx.operations.map((op, index) => applyOperation(opCtx, op, index));
  const success = outcomes.every((o) => o.success);
  if (success) view.commit();

  const diagnosticEvents = outcomes.filter((o) => o.error).map((o) => errorDiagnostic(o.error as string));
  const outcome: InnerOutcome = { kind: 'ops', success, results: outcomes.map((o) => o.result) };
  return {
    status: success ? 'SUCCESS' : 'FAILED',
    result: tx.feeBump ? feeBumpResult(fee, tx.innerHash, outcome) : transactionResult(fee, outcome),
    meta: buildMeta(tx, outcomes, success, transactionEvents, diagnosticEvents),
    contractEvents: success ? outcomes.map((o) => o.events) : [],
    transactionEvents,
    diagnosticEvents,
  };
}
