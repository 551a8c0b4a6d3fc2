import { BASE_FEE, StrKey, xdr } from '@stellar/stellar-sdk';

/**
 * The transaction verify simulates, built straight in XDR (issue #31): the same envelope `TransactionBuilder` makes
 * from `new Account(source, '0')` (sequence 1, the base fee, time bounds 0 .. now + timeout, no memo, one
 * InvokeHostFunction operation, no signatures), without the builder's strkey work, `Transaction` object and
 * re-decoding. The source's XDR account id is decoded once and kept (bounded): verify simulates from the
 * facilitator's account, so in practice one entry per network.
 */

const MAX_SOURCES = 256;
const sources = new Map<string, xdr.MuxedAccount>();
const SEQUENCE_ONE = xdr.Int64.fromString('1');
const ZERO = xdr.Uint64.fromString('0');

function sourceAccount(source: string): xdr.MuxedAccount {
  let account = sources.get(source);
  if (!account) {
    account = xdr.MuxedAccount.keyTypeEd25519(StrKey.decodeEd25519PublicKey(source));
    if (sources.size >= MAX_SOURCES) sources.clear();
    sources.set(source, account);
  }
  return account;
}

/** Base64 TransactionEnvelope of the simulated transaction; `nowSeconds` is the clock the time bound counts from. */
export function simulationEnvelopeXdr(
  source: string,
  hostFunction: xdr.HostFunction,
  auth: xdr.SorobanAuthorizationEntry[],
  timeoutSeconds: number,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): string {
  const tx = new xdr.Transaction({
    sourceAccount: sourceAccount(source),
    fee: Number(BASE_FEE),
    seqNum: SEQUENCE_ONE,
    cond: xdr.Preconditions.precondTime(
      new xdr.TimeBounds({ minTime: ZERO, maxTime: xdr.Uint64.fromString(String(nowSeconds + timeoutSeconds)) }),
    ),
    memo: xdr.Memo.memoNone(),
    operations: [
      new xdr.Operation({
        sourceAccount: null,
        body: xdr.OperationBody.invokeHostFunction(new xdr.InvokeHostFunctionOp({ hostFunction, auth })),
      }),
    ],
    ext: new xdr.TransactionExt(0),
  });
  return xdr.TransactionEnvelope.envelopeTypeTx(new xdr.TransactionV1Envelope({ tx, signatures: [] })).toXDR('base64');
}
