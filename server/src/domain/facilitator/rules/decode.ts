import { StrKey, xdr } from '@stellar/stellar-sdk';
import { addressString } from '../authorization';
import { DomainError } from '../../errors';

/**
 * A payment payload decoded from XDR without judging it: what the client sent, laid out so that each rule of the
 * x402 `exact` Stellar scheme (rules/offline.ts) can look at one part of it. Decoding fails only when the bytes are
 * not the XDR they claim to be (rule `structure.decodable`).
 *
 * Two formats carry the same signed authorization:
 * - `transaction` (x402 `payload.transaction`): a transaction envelope with one invokeHostFunction operation whose
 *   auth entries are signed by the payer;
 * - `sorobanAuthorizationEntry` (our `/v1` format): the payer's signed auth entry alone; the invocation is its root
 *   invocation.
 */
export interface DecodedPayment {
  format: 'transaction' | 'sorobanAuthorizationEntry';
  /** Transaction format only: the envelope kind (`envelopeTypeTx` for a plain v1 transaction). */
  envelopeType: string | null;
  /** Transaction format only: the transaction's and the operation's source accounts (G... strkeys). */
  txSource: string | null;
  opSource: string | null;
  operationTypes: string[];
  /** The host function to invoke (built from the root invocation for the entry format). */
  hostFunction: xdr.HostFunction | null;
  authEntries: xdr.SorobanAuthorizationEntry[];
}

const malformed = (message: string) =>
  new DomainError('INVALID_PAYMENT_PAYLOAD', message, [{ code: 'structure.decodable', message }]);

/** G... / C... of an ScAddress (kept per address: see authorization.ts). */
export const addressOf = addressString;

function accountOf(id: xdr.MuxedAccount): string {
  return id.switch().name === 'keyTypeMuxedEd25519'
    ? StrKey.encodeEd25519PublicKey(id.med25519().ed25519())
    : StrKey.encodeEd25519PublicKey(id.ed25519());
}

function decodeTransaction(b64: string): DecodedPayment {
  let env: xdr.TransactionEnvelope;
  try {
    env = xdr.TransactionEnvelope.fromXDR(b64, 'base64');
  } catch {
    throw malformed('payload.transaction is not a Stellar TransactionEnvelope (base64 XDR)');
  }
  const envelopeType = env.switch().name;
  if (envelopeType !== 'envelopeTypeTx') {
    return {
      format: 'transaction',
      envelopeType,
      txSource: null,
      opSource: null,
      operationTypes: [],
      hostFunction: null,
      authEntries: [],
    };
  }
  const tx = env.v1().tx();
  const ops = tx.operations();
  const first = ops[0];
  const invoke =
    first && first.body().switch().name === 'invokeHostFunction' ? first.body().invokeHostFunctionOp() : null;
  return {
    format: 'transaction',
    envelopeType,
    txSource: accountOf(tx.sourceAccount()),
    opSource: first?.sourceAccount() ? accountOf(first.sourceAccount()!) : null,
    operationTypes: ops.map((o) => o.body().switch().name),
    hostFunction: invoke ? invoke.hostFunction() : null,
    authEntries: invoke ? invoke.auth() : [],
  };
}

function decodeEntry(b64: string): DecodedPayment {
  let entry: xdr.SorobanAuthorizationEntry;
  try {
    entry = xdr.SorobanAuthorizationEntry.fromXDR(b64, 'base64');
  } catch {
    throw malformed('authorization.xdr is not a SorobanAuthorizationEntry (base64 XDR)');
  }
  const fn = entry.rootInvocation().function();
  const hostFunction =
    fn.switch().name === 'sorobanAuthorizedFunctionTypeContractFn'
      ? xdr.HostFunction.hostFunctionTypeInvokeContract(
          new xdr.InvokeContractArgs({
            contractAddress: fn.contractFn().contractAddress(),
            functionName: fn.contractFn().functionName(),
            args: fn.contractFn().args(),
          }),
        )
      : null;
  return {
    format: 'sorobanAuthorizationEntry',
    envelopeType: null,
    txSource: null,
    opSource: null,
    operationTypes: ['invokeHostFunction'],
    hostFunction,
    authEntries: [entry],
  };
}

export function decodePayment(format: string, b64: string): DecodedPayment {
  if (typeof b64 !== 'string' || b64.length === 0) throw malformed('the payment carries no XDR');
  if (format === 'transaction') return decodeTransaction(b64);
  if (format === 'sorobanAuthorizationEntry') return decodeEntry(b64);
  throw malformed(`unknown authorization format ${format}`);
}
