import { scValToNative, xdr } from '@stellar/stellar-sdk';
import type { ErrorCode } from '../../errors';
import { DomainError } from '../../errors';
import { RULES } from './catalog';
import { addressOf } from './decode';
import { ensure } from './rule';

/**
 * The rules judged with the ledger: the expiry window (against the latest ledger the simulation ran after, so a
 * verify needs no other RPC call) and the simulation itself, the authority on everything the offline rules cannot
 * know (signer weights and thresholds, disabled master keys, contract-account payers, frozen trustlines, balances
 * locked as selling liabilities, consumed nonces).
 */

export interface SimulationOutcome {
  /** The latest closed ledger the simulation ran on (it ran in the one after). */
  latestLedger: number;
  /** The host's error when the simulation failed, else null. */
  error: string | null;
  events: xdr.DiagnosticEvent[];
  /** Resource fee the simulation asks for, stroops. */
  minResourceFee: bigint;
}

/** Tolerance for RPC nodes that disagree on the latest ledger (x402 issue tracker), never more. */
export const LEDGER_SKEW_TOLERANCE = 2;
/** The estimate used when the network gives none (the spec's fallback). */
export const FALLBACK_LEDGER_SECONDS = 5;

/** How many ledgers past the latest an authorization may stay valid: ceil(maxTimeoutSeconds / ledgerSeconds) + 2. */
export function maxExpiryLedgers(maxTimeoutSeconds: number, ledgerSeconds: number): number {
  const estimate = ledgerSeconds > 0 ? ledgerSeconds : FALLBACK_LEDGER_SECONDS;
  return Math.ceil(maxTimeoutSeconds / estimate) + LEDGER_SKEW_TOLERANCE;
}

export function checkExpiry(expiration: number, latestLedger: number, maxTimeoutSeconds: number, ledgerSeconds: number): void {
  ensure(RULES.notExpired, expiration > latestLedger, `The authorization expired at ledger ${expiration} (latest ledger ${latestLedger})`);
  const allowed = maxExpiryLedgers(maxTimeoutSeconds, ledgerSeconds);
  ensure(
    RULES.expiryWindow,
    expiration - latestLedger <= allowed,
    `The authorization stays valid until ledger ${expiration}, more than ${allowed} ledgers after the latest (${latestLedger}): maxTimeoutSeconds is ${maxTimeoutSeconds} at ~${ledgerSeconds} s per ledger`,
  );
}

/** The code a failed simulation answers with: what the host's error says went wrong, else SIMULATION_FAILED. */
export function simulationErrorCode(error: string): ErrorCode {
  const contract = /Error\(Contract, #(\d+)\)/.exec(error);
  if (contract) {
    const n = Number(contract[1]);
    if (n === 10) return 'INSUFFICIENT_BALANCE'; // BalanceError (incl. funds locked as selling liabilities)
    if (n === 13 || n === 11) return 'TRUSTLINE_REQUIRED'; // TrustlineMissing, BalanceDeauthorized (frozen)
    if (n === 6) return 'ACCOUNT_NOT_FOUND';
  }
  if (/does not exist|account entry is missing|Error\(Storage, MissingValue\)/.test(error)) return 'ACCOUNT_NOT_FOUND';
  if (/Error\(Auth, ExistingValue\)/.test(error)) return 'REPLAY_DETECTED';
  if (/Error\((Auth|Crypto),/.test(error)) return 'INVALID_SIGNATURE';
  return 'SIMULATION_FAILED';
}

export function checkSimulationSucceeded(sim: SimulationOutcome): void {
  if (sim.error === null) return;
  const message = `The ledger refuses this transfer: ${sim.error.replace(/\s+/g, ' ').slice(0, 300)}`;
  throw new DomainError(simulationErrorCode(sim.error), message, [{ code: RULES.simulationSucceeds.id, message }]);
}

interface Transfer {
  contract: string;
  from: string;
  to: string;
  amount: bigint;
}

/** A contract event as a transfer (SEP-41 / CAP-67: topics ["transfer", from, to, asset?], data amount or {amount, ...}). */
function asTransfer(event: xdr.ContractEvent): Transfer | 'other' {
  const body = event.body().v0();
  const topics = body.topics();
  if (topics.length < 3 || topics[0].switch().name !== 'scvSymbol' || topics[0].sym().toString() !== 'transfer') return 'other';
  if (topics[1].switch().name !== 'scvAddress' || topics[2].switch().name !== 'scvAddress') return 'other';
  const id = event.contractId();
  if (!id) return 'other';
  const data = body.data();
  let amount: unknown = null;
  if (data.switch().name === 'scvI128') amount = scValToNative(data);
  else if (data.switch().name === 'scvMap') amount = (scValToNative(data) as Record<string, unknown>).amount;
  if (typeof amount !== 'bigint') return 'other';
  return { contract: addressOf(xdr.ScAddress.scAddressTypeContract(id as unknown as xdr.Hash)), from: addressOf(topics[1].address()), to: addressOf(topics[2].address()), amount };
}

/**
 * The simulation's contract events are exactly one transfer of `amount` from the payer to payTo on the asset
 * contract: nothing else changes a balance (no second transfer, mint, burn, clawback or approval).
 */
export function checkExactBalanceChanges(sim: SimulationOutcome, expected: { payer: string; payTo: string; amount: bigint; contractId: string }): void {
  const contractEvents = sim.events.map((d) => d.event()).filter((e) => e.type().name === 'contract');
  const transfers = contractEvents.map(asTransfer);
  ensure(RULES.exactBalanceChanges, transfers.length === 1 && transfers[0] !== 'other', `The simulation emitted ${contractEvents.length} contract events; exactly one transfer is allowed`);
  const t = transfers[0] as Transfer;
  const exact = t.contract === expected.contractId && t.from === expected.payer && t.to === expected.payTo && t.amount === expected.amount;
  ensure(RULES.exactBalanceChanges, exact, 'The simulated transfer event differs from payer -amount / payTo +amount on the required asset');
}
