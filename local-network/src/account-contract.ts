import { Address, StrKey, hash, xdr } from '@stellar/stellar-sdk';
import { verifyEd25519 } from './ed25519';
import { HostError } from './host-error';
import { LedgerView, entryKey, getAccountContract } from './ledger-state';

/**
 * The local network's one custom account contract: a simple "ed25519 account" (local simulation: there is no
 * Wasm VM; the contract is built in, like the Stellar Asset Contracts). An instance holds one ed25519 public key;
 * its `__check_auth(signature_payload, signature, auth_contexts)` accepts a Soroban address credential whose
 * signature ScVal is `bytes(64)`: the ed25519 signature by that key of the 32-byte signature payload
 * (sha256 of HashIdPreimage envelopeTypeSorobanAuthorization {networkId, nonce, signatureExpirationLedger,
 * invocation}, the same payload G accounts sign). Auth contexts are not restricted. Deployed by the
 * POST /contract-account convenience; its address can hold SAC balances and authorize SAC transfers.
 */

/** The Wasm hash the instance reports as its executable (a name, not real Wasm: nothing is uploaded). */
export const ACCOUNT_CONTRACT_WASM_HASH = hash(Buffer.from('local-network ed25519 account contract v1'));

/** The contract id a deployer (the network's root account) gets for `publicKey` as salt, as createContract derives it.
 * */
export function accountContractId(networkId: Buffer, deployer: string, publicKey: string): string {
  const preimage = xdr.HashIdPreimage.envelopeTypeContractId(
    new xdr.HashIdPreimageContractId({
      networkId,
      contractIdPreimage: xdr.ContractIdPreimage.contractIdPreimageFromAddress(
        new xdr.ContractIdPreimageFromAddress({
          address: new Address(deployer).toScAddress(),
          salt: StrKey.decodeEd25519PublicKey(publicKey),
        }),
      ),
    }),
  );
  return StrKey.encodeContract(hash(preimage.toXDR()));
}

/** Creates the instance (idempotent); returns its contract id. */
export function deployAccountContract(
  view: LedgerView,
  networkId: Buffer,
  deployer: string,
  publicKey: string,
  ledger: number,
): string {
  if (!StrKey.isValidEd25519PublicKey(publicKey))
    throw new Error(`invalid ed25519 public key ${publicKey} (expected G...)`);
  const contractId = accountContractId(networkId, deployer, publicKey);
  if (!getAccountContract(view, contractId))
    view.set(entryKey.accountContract(contractId), { kind: 'accountContract', publicKey, lastModified: ledger });
  return contractId;
}

/** The instance's storage: {PublicKey: bytes(32)} under executable Wasm ACCOUNT_CONTRACT_WASM_HASH. */
export function accountContractInstance(publicKey: string): xdr.ScVal {
  return xdr.ScVal.scvContractInstance(
    new xdr.ScContractInstance({
      executable: xdr.ContractExecutable.contractExecutableWasm(ACCOUNT_CONTRACT_WASM_HASH),
      storage: [
        new xdr.ScMapEntry({
          key: xdr.ScVal.scvSymbol('PublicKey'),
          val: xdr.ScVal.scvBytes(StrKey.decodeEd25519PublicKey(publicKey)),
        }),
      ],
    }),
  );
}

/** `__check_auth` of the instance at `contractId` for a signature over `payload`; throws HostError when refused. */
export function checkAccountContractAuth(
  view: LedgerView,
  contractId: string,
  payload: Buffer,
  signature: xdr.ScVal,
): void {
  const instance = getAccountContract(view, contractId);
  if (!instance)
    throw new HostError(
      'Storage',
      'MissingValue',
      `contract ${contractId} does not exist on the local network (deploy it with POST /contract-account)`,
    );
  if (signature.switch().name !== 'scvBytes' || signature.bytes().length !== 64) {
    throw new HostError(
      'Value',
      'UnexpectedType',
      `the ed25519 account contract ${contractId} expects its signature as bytes(64)`,
    );
  }
  if (!verifyEd25519(StrKey.decodeEd25519PublicKey(instance.publicKey), payload, signature.bytes())) {
    throw new HostError(
      'Crypto',
      'InvalidInput',
      `ed25519 signature for account contract ${contractId} does not verify over the authorization payload`,
    );
  }
}
