/**
 * The raw baseline of bench:verify: the simulateTransaction JSON-RPC request the service sends for a verify
 * (SorobanLedger.simulate: the payer's signed authorization entry on the transfer it authorizes, in a transaction
 * from the payer's account at sequence 0, base fee, the settlement time bound; authMode "enforce"), built here from
 * the same POST /v1/verify body and sent straight to the local network.
 */
import { Account, Address, BASE_FEE, Operation, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import type { VerifyBody } from './payments';

/** The JSON-RPC body of the simulation the service makes for `body` (source: the payer, as with no channels). */
export function rawSimulateRequest(body: VerifyBody, passphrase: string, txTimeoutSeconds: number, id: number): string {
  const auth = body.paymentPayload.authorization as { xdr: string };
  const entry = xdr.SorobanAuthorizationEntry.fromXDR(auth.xdr, 'base64');
  const call = entry.rootInvocation().function().contractFn();
  const func = xdr.HostFunction.hostFunctionTypeInvokeContract(
    new xdr.InvokeContractArgs({
      contractAddress: call.contractAddress(),
      functionName: call.functionName(),
      args: call.args(),
    }),
  );
  const payer = entry.credentials().address().address();
  const source = Address.fromScAddress(payer).toString();
  const tx = new TransactionBuilder(new Account(source, '0'), { fee: BASE_FEE, networkPassphrase: passphrase })
    .addOperation(Operation.invokeHostFunction({ func, auth: [entry] }))
    .setTimeout(txTimeoutSeconds)
    .build();
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'simulateTransaction',
    params: { transaction: tx.toXDR(), authMode: 'enforce' },
  });
}

/** A simulation answer that succeeded (HTTP 200, a result, no error in it). */
export function simulationSucceeded(a: { status: number; text: string }): boolean {
  return a.status === 200 && a.text.includes('"result"') && !a.text.includes('"error"');
}
