import { Operation, xdr } from '@stellar/stellar-sdk';
import { AssetRegistry } from './asset-registry';
import { AuthMode } from './auth-verify';
import { errorDiagnostic, invocationDiagnostics } from './contract-events';
import { HostError } from './host-error';
import { invokeHost } from './host-invoke';
import { LedgerOverlay, LedgerView } from './ledger-state';
import { RpcError } from './rpc-error';
import { parseTransaction, operationSource } from './transaction-envelope';

/**
 * simulateTransaction: runs the transaction's single InvokeHostFunction against a throwaway overlay of the
 * current state, in the ledger after the latest one. Without auth entries it records the authorizations the
 * invocation needs (address credentials get a fresh random nonce; V1 credentials, or CAP-71 V2 ones when the request
 * says useUpgradedAuth, as Stellar RPC 27.1 does); with them it enforces them (signature, nonce, expiry), as the
 * real RPC does.
 */

export interface SimulationContext {
  store: LedgerView;
  registry: AssetRegistry;
  passphrase: string;
  networkId: Buffer;
  latestLedger: number;
}

export interface RawSimulation {
  latestLedger: number;
  error?: string;
  transactionData?: string;
  minResourceFee?: string;
  events?: string[];
  results?: Array<{ auth: string[]; xdr: string }>;
}

function authModeOf(requested: string | undefined, op: Operation.InvokeHostFunction): AuthMode {
  if (requested === undefined || requested === '') return (op.auth ?? []).length > 0 ? 'enforce' : 'record';
  if (requested === 'enforce') return 'enforce';
  if (requested === 'record' || requested === 'record_allow_nonroot') return 'record';
  throw new RpcError(RpcError.invalidParams, `invalid authMode "${requested}"`);
}

/** `upgradedAuth` (the request's useUpgradedAuth): recording mode produces CAP-71 V2 address credentials. */
export function simulateTransaction(
  ctx: SimulationContext,
  envelopeXdr: string,
  requestedAuthMode?: string,
  upgradedAuth = false,
): RawSimulation {
  let tx;
  try {
    tx = parseTransaction(envelopeXdr, ctx.passphrase);
  } catch (error) {
    throw new RpcError(RpcError.invalidParams, `could not unmarshal transaction: ${(error as Error).message}`);
  }
  const base = { latestLedger: ctx.latestLedger };
  const op = tx.operations[0];
  if (tx.operations.length !== 1 || op.type !== 'invokeHostFunction') {
    return {
      ...base,
      error:
        'Transaction contains unsupported operation: the local network simulates exactly one ' +
        'InvokeHostFunction operation',
    };
  }
  const mode = authModeOf(requestedAuthMode, op);
  try {
    const run = invokeHost({
      view: new LedgerOverlay(ctx.store),
      registry: ctx.registry,
      networkId: ctx.networkId,
      currentLedger: ctx.latestLedger + 1,
      invoker: operationSource(tx, op),
      mode,
      upgradedAuth,
      hostFunction: op.func,
      authEntries: op.auth ?? [],
    });
    const transactionData = new xdr.SorobanTransactionData({
      ext: new xdr.SorobanTransactionDataExt(0),
      resources: run.resources,
      resourceFee: xdr.Int64.fromString(run.resourceFee.toString()),
    });
    return {
      ...base,
      transactionData: transactionData.toXDR('base64'),
      minResourceFee: run.resourceFee.toString(),
      events: invocationDiagnostics(run.call, run.events, { returnValue: run.returnValue }).map((e) =>
        e.toXDR('base64'),
      ),
      results: [{ auth: run.recordedAuth.map((a) => a.toXDR('base64')), xdr: run.returnValue.toXDR('base64') }],
    };
  } catch (error) {
    if (!(error instanceof HostError)) throw error;
    const call = op.func.switch().name === 'hostFunctionTypeInvokeContract' ? op.func.invokeContract() : undefined;
    const events = call ? invocationDiagnostics(call, [], { error: error.message }) : [errorDiagnostic(error.message)];
    return { ...base, error: error.message, events: events.map((e) => e.toXDR('base64')) };
  }
}
