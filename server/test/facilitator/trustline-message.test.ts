/**
 * Issue 32: TRUSTLINE_REQUIRED says whose wallet lacks the trustline, from the host's own error, in the local
 * network's words and in the real Soroban host's diagnostic-event form (pure: a host error in, a message out).
 */
import { Keypair } from '@stellar/stellar-sdk';
import { DomainError } from '../../src/domain/errors';
import {
  checkSimulationSucceeded,
  trustlineHolder,
  trustlineMessage,
} from '../../src/domain/facilitator/rules/simulation';

const payer = Keypair.random().publicKey();
const payTo = Keypair.random().publicKey();
const parties = { payer, payTo, assetCode: 'USDC' };

/** The real host's simulateTransaction error: the fn_call event names both accounts, the error event only the holder.
 * */
const realHost = (holder: string, n: 11 | 13) =>
  `HostError: Error(Contract, #${n})\n\nEvent log (newest first):\n   0: [Diagnostic Event] contract:CA…, ` +
  `topics:[error, Error(Contract, #${n})], ` +
  `data:["${n === 13 ? 'trustline entry is missing for account' : 'balance is deauthorized'}", ${holder}]\n   ` +
  `1: [Diagnostic Event] topics:[fn_call, CA…, transfer], data:[${payer}, ${payTo}, 5000000]`;

describe('TRUSTLINE_REQUIRED names the wallet that lacks the trustline', () => {
  it(
    'the local network\'s "trustline entry is missing for account <payTo>" says the seller\'s wallet cannot ' +
      'receive USDC',
    () => {
      const error =
        `HostError: Error(Contract, #13)\n\ntrustline entry is ` + `missing for account ${payTo} (asset USDC:G…)`;
      expect(trustlineHolder(error)).toBe(payTo);
      expect(trustlineMessage(error, parties)).toMatch(
        /^The seller's wallet cannot receive USDC: it has no USDC trustline/,
      );
    },
  );

  it(
    'the real host\'s diagnostic event naming the payer says "your wallet has no USDC trustline", although the ' +
      'transfer call names both accounts',
    () => {
      const error = realHost(payer, 13);
      expect(trustlineHolder(error)).toBe(payer);
      expect(trustlineMessage(error, parties)).toMatch(/^Your wallet has no USDC trustline \(payer /);
    },
  );

  it(
    "a frozen trustline (#11) of the payer says it is not authorized by the issuer; of payTo, that the seller's " +
      'wallet cannot receive USDC',
    () => {
      const error =
        `HostError: Error(Contract, #11)\n\ntrustline of ${payer} is ` + `not authorized by the issuer (asset USDC:G…)`;
      expect(trustlineMessage(error, parties)).toMatch(/^Your wallet's USDC trustline is not authorized by the issuer/);
      expect(trustlineMessage(realHost(payTo, 11), parties)).toMatch(
        /^The seller's wallet cannot receive USDC: the issuer has not authorized its USDC trustline/,
      );
    },
  );

  it(
    'a host error that names no holder says it may be either wallet, and the code stays TRUSTLINE_REQUIRED with ' +
      "the host's words in details",
    () => {
      let thrown: DomainError | null = null;
      try {
        checkSimulationSucceeded(
          { latestLedger: 1, error: 'HostError: Error(Contract, #13)', events: [], minResourceFee: 0n },
          parties,
        );
      } catch (e) {
        thrown = e as DomainError;
      }
      expect(thrown?.code).toBe('TRUSTLINE_REQUIRED');
      expect(thrown?.message).toBe(
        "The payer's or the seller's wallet has no usable USDC trustline (the ledger did not say whose)",
      );
      expect(thrown?.details).toEqual([
        { code: 'simulation.succeeds', message: 'The ledger refuses this transfer: HostError: Error(Contract, #13)' },
      ]);
    },
  );
});
