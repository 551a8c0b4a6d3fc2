import { Address, authorizeInvocation, nativeToScVal, xdr, type Keypair } from '@stellar/stellar-sdk';
import { toStroops } from '../amount';

/**
 * The server-side signer of the conformance runner: a SorobanAuthorizationEntry for the asset contract's
 * transfer(payer, payTo, amount) signed by the payer with `signatureExpirationLedger = expiration`, the x402 `exact`
 * scheme on Stellar (the same construction as the buyer SDK's sign-payment and the facilitator tests).
 */
export async function signTransfer(o: {
  payer: Keypair;
  contractId: string;
  payTo: string;
  amount: string;
  expiration: number;
  passphrase: string;
}): Promise<xdr.SorobanAuthorizationEntry> {
  const invocation = new xdr.SorobanAuthorizedInvocation({
    function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
      new xdr.InvokeContractArgs({
        contractAddress: new Address(o.contractId).toScAddress(),
        functionName: 'transfer',
        args: [
          nativeToScVal(o.payer.publicKey(), { type: 'address' }),
          nativeToScVal(o.payTo, { type: 'address' }),
          nativeToScVal(toStroops(o.amount), { type: 'i128' }),
        ],
      }),
    ),
    subInvocations: [],
  });
  return authorizeInvocation(o.payer, o.expiration, invocation, o.payer.publicKey(), o.passphrase);
}
