import { Address, xdr } from '@stellar/stellar-sdk';
import { AssetRegistry } from './asset-registry';
import { AuthMode } from './auth-verify';
import { FootprintRecorder } from './footprint';
import { HostError } from './host-error';
import { ledgerKeys, readLedgerEntry } from './ledger-entries';
import { LedgerView } from './ledger-state';
import { resourceFeeOf } from './resource-fee';
import { SAC_INSTRUCTIONS, callStellarAssetContract } from './stellar-asset-contract';

/**
 * The simulated Soroban host: runs one InvokeHostFunction against a ledger view and reports what a real host
 * reports (return value, contract events, recorded auth, the footprint it touched and the resources it used).
 * Only Stellar Asset Contracts exist on the local network.
 */

export interface HostInvocation {
  view: LedgerView;
  registry: AssetRegistry;
  networkId: Buffer;
  currentLedger: number;
  invoker: string;
  mode: AuthMode;
  /** Recording mode: produce CAP-71 V2 address credentials (simulateTransaction's useUpgradedAuth). */
  upgradedAuth?: boolean;
  hostFunction: xdr.HostFunction;
  authEntries: xdr.SorobanAuthorizationEntry[];
}

export interface HostInvocationResult {
  call: xdr.InvokeContractArgs;
  returnValue: xdr.ScVal;
  events: xdr.ContractEvent[];
  recordedAuth: xdr.SorobanAuthorizationEntry[];
  footprint: FootprintRecorder;
  resources: xdr.SorobanResources;
  resourceFee: bigint;
}

function entrySizes(view: LedgerView, registry: AssetRegistry, keys: xdr.LedgerKey[], latestLedger: number): number {
  let total = 0;
  for (const key of keys) {
    const found = readLedgerEntry(view, registry, key, latestLedger);
    if (found) total += found.data.toXDR().length;
  }
  return total;
}

/** Runs the host function; throws HostError when the invocation fails (it is then trapped, as on the real network). */
export function invokeHost(inv: HostInvocation): HostInvocationResult {
  if (inv.hostFunction.switch().name !== 'hostFunctionTypeInvokeContract') {
    throw new HostError(
      'Context',
      'InvalidAction',
      `${inv.hostFunction.switch().name} is not supported: the local network only runs Stellar Asset Contracts`,
    );
  }
  const call = inv.hostFunction.invokeContract();
  const contractId = Address.fromScAddress(call.contractAddress()).toString();
  const asset = inv.registry.byContractId(contractId);
  if (!asset) {
    throw new HostError(
      'Storage',
      'MissingValue',
      `contract ${contractId} does not exist on the local network (only Stellar Asset Contracts are deployed)`,
    );
  }
  const footprint = new FootprintRecorder();
  footprint.read(ledgerKeys.sacInstance(contractId));
  const events: xdr.ContractEvent[] = [];
  const recordedAuth: xdr.SorobanAuthorizationEntry[] = [];
  const auth = {
    view: inv.view,
    networkId: inv.networkId,
    currentLedger: inv.currentLedger,
    invoker: inv.invoker,
    mode: inv.mode,
    upgradedAuth: inv.upgradedAuth ?? false,
    entries: inv.authEntries,
    footprint,
    recorded: recordedAuth,
  };
  const returnValue = callStellarAssetContract({
    asset,
    call,
    auth,
    footprint,
    currentLedger: inv.currentLedger,
    events,
  });
  const { readOnly, readWrite } = footprint.keys();
  const classicReads = [...readOnly, ...readWrite].filter((k) => k.switch().name !== 'contractData');
  const resources = new xdr.SorobanResources({
    footprint: footprint.toFootprint(),
    instructions: SAC_INSTRUCTIONS[call.functionName().toString()] ?? 0,
    diskReadBytes: entrySizes(inv.view, inv.registry, classicReads, inv.currentLedger),
    writeBytes: entrySizes(inv.view, inv.registry, readWrite, inv.currentLedger),
  });
  return { call, returnValue, events, recordedAuth, footprint, resources, resourceFee: resourceFeeOf(resources) };
}
