import { xdr } from '@stellar/stellar-sdk';
import { AssetRegistry } from './asset-registry';
import { LedgerView } from './ledger-state';
import { ParsedTransaction } from './transaction-envelope';

/** What every operation's apply function gets and returns. */

export interface OperationContext {
  view: LedgerView;
  registry: AssetRegistry;
  passphrase: string;
  networkId: Buffer;
  ledgerSeq: number;
  tx: ParsedTransaction;
}

export interface OperationOutcome {
  result: xdr.OperationResult;
  success: boolean;
  events: xdr.ContractEvent[];
  returnValue?: xdr.ScVal;
  /** Why a Soroban invocation failed, for diagnostics. */
  error?: string;
}

export const inner = (tr: xdr.OperationResultTr): xdr.OperationResult => xdr.OperationResult.opInner(tr);
export const done = (
  result: xdr.OperationResult,
  success: boolean,
  events: xdr.ContractEvent[] = [],
): OperationOutcome => ({ result, success, events });
