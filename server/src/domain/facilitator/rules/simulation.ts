import { scValToNative, xdr } from '@stellar/stellar-sdk';
import type { ErrorCode } from '../../errors';
import { DomainError } from '../../errors';
import { RULES } from './catalog';
import { addressOf } from './decode';
import { ensure } from './rule';
import type { Stroops } from '../../amount';
import type { AssetContractId } from '../../network-registry';

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

export function checkExpiry(
  expiration: number,
  latestLedger: number,
  maxTimeoutSeconds: number,
  ledgerSeconds: number,
): void {
  ensure(
    RULES.notExpired,
    expiration > latestLedger,
    `The authorization expired at ledger ${expiration} (latest ledger ${latestLedger})`,
  );
  const allowed = maxExpiryLedgers(maxTimeoutSeconds, ledgerSeconds);
  ensure(
    RULES.expiryWindow,
    expiration - latestLedger <= allowed,
    `The authorization stays valid until ledger ${expiration}, more than ${allowed} ledgers after the latest ` +
      `(${latestLedger}): maxTimeoutSeconds is ${maxTimeoutSeconds} at ~${ledgerSeconds} s per ledger`,
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

/** Who takes part in the transfer: a missing trustline is named after its holder (issue 32). */
export interface TransferParties {
  payer: string;
  payTo: string;
  assetCode: string;
}

/**
 * The account whose trustline the host refused, as the host's error names it: the local network's
 * "trustline entry is missing for account G…" / "trustline of G… is not authorized", and the real host's diagnostic
 * event (data ["trustline entry is missing for account", G…] or ["balance is deauthorized", G…]). Null when the
 * error names no holder.
 */
export function trustlineHolder(error: string): string | null {
  const named =
    /(?:trustline entry is missing for account|trustline of|balance is deauthorized)\W{0,8}([GC][A-Z2-7]{55})/.exec(
      error,
    );
  return named ? named[1] : null;
}

/**
 * TRUSTLINE_REQUIRED in words that say whose wallet lacks it: the seller's (payTo cannot receive the asset: the
 * buyer can do nothing but tell the seller) or the buyer's (the payer cannot send it). #11 is a trustline the issuer
 * has not authorized (frozen). The code stays TRUSTLINE_REQUIRED either way.
 */
export function trustlineMessage(error: string, parties: TransferParties): string {
  const holder = trustlineHolder(error);
  const frozen = /Error\(Contract, #11\)/.test(error);
  const asset = parties.assetCode;
  if (holder === parties.payTo)
    return frozen
      ? `The seller's wallet cannot receive ${asset}: the issuer has not authorized its ${asset} trustline (payTo ` +
          `${parties.payTo}). Nothing was charged; the seller must fix its wallet.`
      : `The seller's wallet cannot receive ${asset}: it has no ${asset} trustline (payTo ${parties.payTo}). ` +
          `Nothing was charged; the seller must add the trustline.`;
  if (holder === parties.payer)
    return frozen
      ? `Your wallet's ${asset} trustline is not authorized by the issuer (payer ${parties.payer}): it cannot ` +
          `send ${asset}.`
      : `Your wallet has no ${asset} trustline (payer ${parties.payer}): add one (changeTrust) and fund it with ` +
          `${asset} before paying.`;
  return `The payer's or the seller's wallet has no usable ${asset} trustline (the ledger did not say whose)`;
}

export function checkSimulationSucceeded(sim: SimulationOutcome, parties?: TransferParties): void {
  if (sim.error === null) return;
  const reason = `The ledger refuses this transfer: ${sim.error.replace(/\s+/g, ' ').slice(0, 300)}`;
  const code = simulationErrorCode(sim.error);
  const message = code === 'TRUSTLINE_REQUIRED' && parties ? trustlineMessage(sim.error, parties) : reason;
  throw new DomainError(code, message, [{ code: RULES.simulationSucceeds.id, message: reason }]);
}

interface Transfer {
  contract: string;
  from: string;
  to: string;
  amount: bigint;
}

/** A contract event as a transfer (SEP-41 / CAP-67: topics ["transfer", from, to, asset?], data amount or {amount,
 * ...}). */
function asTransfer(event: xdr.ContractEvent): Transfer | 'other' {
  const body = event.body().v0();
  const topics = body.topics();
  if (topics.length < 3 || topics[0].switch().name !== 'scvSymbol' || topics[0].sym().toString() !== 'transfer')
    return 'other';
  if (topics[1].switch().name !== 'scvAddress' || topics[2].switch().name !== 'scvAddress') return 'other';
  const id = event.contractId();
  if (!id) return 'other';
  const data = body.data();
  let amount: unknown = null;
  if (data.switch().name === 'scvI128') amount = scValToNative(data);
  else if (data.switch().name === 'scvMap') amount = (scValToNative(data) as Record<string, unknown>).amount;
  if (typeof amount !== 'bigint') return 'other';
  return {
    contract: addressOf(xdr.ScAddress.scAddressTypeContract(id as unknown as xdr.Hash)),
    from: addressOf(topics[1].address()),
    to: addressOf(topics[2].address()),
    amount,
  };
}

/**
 * The simulation's contract events are exactly one transfer of `amount` from the payer to payTo on the asset
 * contract: nothing else changes a balance (no second transfer, mint, burn, clawback or approval).
 */
export function checkExactBalanceChanges(
  sim: SimulationOutcome,
  expected: { payer: string; payTo: string; amount: Stroops; contractId: AssetContractId },
): void {
  const contractEvents = sim.events.map((d) => d.event()).filter((e) => e.type().name === 'contract');
  const transfers = contractEvents.map(asTransfer);
  ensure(
    RULES.exactBalanceChanges,
    transfers.length === 1 && transfers[0] !== 'other',
    `The simulation emitted ${contractEvents.length} contract events; exactly one transfer is allowed`,
  );
  const t = transfers[0] as Transfer;
  const exact =
    t.contract === expected.contractId &&
    t.from === expected.payer &&
    t.to === expected.payTo &&
    t.amount === expected.amount;
  ensure(
    RULES.exactBalanceChanges,
    exact,
    'The simulated transfer event differs from payer -amount / payTo +amount on the required asset',
  );
}
