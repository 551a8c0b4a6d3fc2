import { Address, StrKey, nativeToScVal, xdr } from '@stellar/stellar-sdk';

/**
 * Stellar Asset Contract events as protocol 23 (CAP-67) emits them, built as real `ContractEvent` XDR:
 * transfer [symbol "transfer", from, to, "CODE:ISSUER"] -> i128 amount, mint/burn for classic payments that
 * involve the issuer, and the transaction-level fee event from the native asset's contract.
 */

function contractEvent(contractId: string, topics: xdr.ScVal[], data: xdr.ScVal): xdr.ContractEvent {
  return new xdr.ContractEvent({
    ext: new xdr.ExtensionPoint(0),
    contractId: StrKey.decodeContract(contractId) as unknown as xdr.Hash,
    type: xdr.ContractEventType.contract(),
    body: new xdr.ContractEventBody(0, new xdr.ContractEventV0({ topics, data })),
  });
}

const sym = (s: string): xdr.ScVal => xdr.ScVal.scvSymbol(s);
const addr = (a: string): xdr.ScVal => new Address(a).toScVal();
const i128 = (n: bigint): xdr.ScVal => nativeToScVal(n, { type: 'i128' });

export interface AssetEventSource {
  contractId: string;
  /** SEP-11 asset string: "native" or "CODE:ISSUER". */
  assetId: string;
  issuer: string;
}

/** The event a SAC `transfer(from, to, amount)` call emits. */
export function transferEvent(asset: AssetEventSource, from: string, to: string, amount: bigint): xdr.ContractEvent {
  return contractEvent(
    asset.contractId,
    [sym('transfer'), addr(from), addr(to), xdr.ScVal.scvString(asset.assetId)],
    i128(amount),
  );
}

/**
 * The event a classic payment or a SAC transfer emits (CAP-67): mint when the issuer pays, burn when the issuer is
 * paid, transfer otherwise (and when the issuer pays itself).
 */
export function paymentEvent(asset: AssetEventSource, from: string, to: string, amount: bigint): xdr.ContractEvent {
  const assetTopic = xdr.ScVal.scvString(asset.assetId);
  if (asset.issuer && from === asset.issuer && to === asset.issuer) return transferEvent(asset, from, to, amount);
  if (asset.issuer && from === asset.issuer)
    return contractEvent(asset.contractId, [sym('mint'), addr(to), assetTopic], i128(amount));
  if (asset.issuer && to === asset.issuer)
    return contractEvent(asset.contractId, [sym('burn'), addr(from), assetTopic], i128(amount));
  return transferEvent(asset, from, to, amount);
}

/** CAP-67 `set_authorized` [symbol, id, "CODE:ISSUER"] -> bool, when an issuer changes a trustline's authorization. */
export function setAuthorizedEvent(asset: AssetEventSource, id: string, authorized: boolean): xdr.ContractEvent {
  return contractEvent(
    asset.contractId,
    [sym('set_authorized'), addr(id), xdr.ScVal.scvString(asset.assetId)],
    xdr.ScVal.scvBool(authorized),
  );
}

/** The fee event charged to the fee source, emitted by the native asset contract. */
export function feeEvent(nativeContractId: string, feeSource: string, amount: bigint): xdr.ContractEvent {
  return contractEvent(nativeContractId, [sym('fee'), addr(feeSource)], i128(amount));
}

export function asDiagnostic(event: xdr.ContractEvent, inSuccessfulContractCall = true): xdr.DiagnosticEvent {
  return new xdr.DiagnosticEvent({ inSuccessfulContractCall, event });
}

function diagnostic(contractId: string | null, topics: xdr.ScVal[], data: xdr.ScVal): xdr.ContractEvent {
  return new xdr.ContractEvent({
    ext: new xdr.ExtensionPoint(0),
    contractId: contractId ? (StrKey.decodeContract(contractId) as unknown as xdr.Hash) : null,
    type: xdr.ContractEventType.diagnostic(),
    body: new xdr.ContractEventBody(0, new xdr.ContractEventV0({ topics, data })),
  });
}

/**
 * The diagnostic events a host in diagnostic mode (as Soroban RPC runs simulations) emits around a root call:
 * `fn_call` [symbol "fn_call", bytes(contract id), symbol fn] -> args (no contract: the transaction calls it),
 * then the call's contract events, then `fn_return` [symbol "fn_return", symbol fn] -> return value from the
 * contract. A failed call ends with the host's error event instead of fn_return.
 */
export function invocationDiagnostics(
  call: xdr.InvokeContractArgs,
  contractEvents: xdr.ContractEvent[],
  outcome: { returnValue: xdr.ScVal } | { error: string },
): xdr.DiagnosticEvent[] {
  const contractId = Address.fromScAddress(call.contractAddress()).toString();
  const fn = call.functionName().toString();
  const ok = 'returnValue' in outcome;
  const fnCall = diagnostic(
    null,
    [sym('fn_call'), xdr.ScVal.scvBytes(StrKey.decodeContract(contractId)), sym(fn)],
    xdr.ScVal.scvVec(call.args()),
  );
  const events = [new xdr.DiagnosticEvent({ inSuccessfulContractCall: ok, event: fnCall })];
  if (!ok) return [...events, errorDiagnostic(outcome.error)];
  events.push(...contractEvents.map((e) => asDiagnostic(e, true)));
  events.push(
    new xdr.DiagnosticEvent({
      inSuccessfulContractCall: true,
      event: diagnostic(contractId, [sym('fn_return'), sym(fn)], outcome.returnValue),
    }),
  );
  return events;
}

/** A diagnostic "error" event carrying the host's explanation, as the real RPC returns for failed invocations. */
export function errorDiagnostic(message: string): xdr.DiagnosticEvent {
  const event = new xdr.ContractEvent({
    ext: new xdr.ExtensionPoint(0),
    contractId: null,
    type: xdr.ContractEventType.diagnostic(),
    body: new xdr.ContractEventBody(
      0,
      new xdr.ContractEventV0({ topics: [sym('error')], data: xdr.ScVal.scvString(message) }),
    ),
  });
  return new xdr.DiagnosticEvent({ inSuccessfulContractCall: false, event });
}
