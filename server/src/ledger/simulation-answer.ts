import { xdr, type rpc } from '@stellar/stellar-sdk';
import type { SimulationOutcome } from '../domain/facilitator/types';

/**
 * A simulateTransaction answer decoded only as far as verify's rules read it (issue #31): the latest ledger, the
 * host's error, the resource fee and the CONTRACT events. `rpc.parseRawSimulation` also decodes the footprint
 * (SorobanTransactionData), the recorded auth entries, the return value and every diagnostic event; verify reads none
 * of them (settle, which assembles the transaction, still uses the SDK's full parse). A diagnostic or system event is
 * recognised from its first bytes and never decoded: the rules count and read contract events only.
 */
export function simulationForRules(raw: rpc.Api.RawSimulateTransactionResponse): SimulationOutcome {
  const events = contractEvents(raw.events ?? []);
  if (typeof raw.error === 'string')
    return { latestLedger: raw.latestLedger, error: raw.error, events, minResourceFee: 0n };
  return { latestLedger: raw.latestLedger, error: null, events, minResourceFee: BigInt(raw.minResourceFee ?? '0') };
}

/** ContractEventType.CONTRACT's value in XDR. */
const CONTRACT_EVENT = 1;

/**
 * The contract events among base64 DiagnosticEvents. Layout: inSuccessfulContractCall (4 bytes), then the
 * ContractEvent: ext (4 bytes, 0), contractId (optional Hash: a 4-byte flag, then 32 bytes when present), type (4
 * bytes). An event whose layout is not this (a future ext) is decoded and judged by its decoded type.
 */
export function contractEvents(encoded: readonly string[]): xdr.DiagnosticEvent[] {
  const out: xdr.DiagnosticEvent[] = [];
  for (const b64 of encoded) {
    const bytes = Buffer.from(b64, 'base64');
    const type = eventType(bytes);
    if (type !== null && type !== CONTRACT_EVENT) continue;
    const event = xdr.DiagnosticEvent.fromXDR(bytes);
    if (event.event().type().value === CONTRACT_EVENT) out.push(event);
  }
  return out;
}

function eventType(bytes: Buffer): number | null {
  if (bytes.length < 16 || bytes.readUInt32BE(4) !== 0) return null;
  const flag = bytes.readUInt32BE(8);
  const at = flag === 0 ? 12 : flag === 1 ? 44 : -1;
  return at > 0 && bytes.length >= at + 4 ? bytes.readUInt32BE(at) : null;
}
