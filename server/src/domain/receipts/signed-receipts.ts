import { isOperatorOrSeller, type Principal } from '../auth/principal';
import type { ReceiptRecord } from '../facilitator/types';

/** What a signed receipt is made from (a ReceiptRecord, or a receipt as the API presents it). */
export type ReceiptFacts = Pick<
  ReceiptRecord,
  'paymentAttemptId' | 'network' | 'transactionHash' | 'status' | 'settledAt' | 'amount' | 'assetCode' | 'assetIssuer'
> & {
  resourceId: string | null;
  sellerId: string | null;
  ledger: number | null;
};
import type { PublicJwk, ReceiptClaims, ReceiptSigner } from './receipt-signer';

export interface SignedReceiptsDeps {
  signer: ReceiptSigner;
  /** The payer and payTo of a payment attempt; null when unknown. */
  partiesOf(paymentAttemptId: string): Promise<{ payer: string; payTo: string } | null>;
  /** The SEP-41 contract of a configured asset. */
  assetContract(network: string, code: string, issuer: string): string | null;
  /** The fees the settlement of a payment attempt bid (inclusion, resource, percentile); null when not recorded. */
  feesOf?(paymentAttemptId: string): Promise<ReceiptClaims['fees'] | null>;
  /** The cataloged URL of a resource; null when unknown. */
  resourceUrlOf(resourceId: string): Promise<string | null>;
  /**
   * The public keys other processes sharing the database sign with (absent: this process's keys only). They are
   * published too, so a receipt signed by any process verifies against the key set of any other.
   */
  sharedKeys?(): Promise<PublicJwk[]>;
}

export interface SignedReceipts {
  /** The facilitator's attestation of a settled receipt (null while it is not settled). */
  sign(receipt: ReceiptFacts): Promise<string | null>;
  /** The attestation for this reader: only the receipt's seller and the operator get it (it names the payer). */
  forReader(principal: Principal, receipt: ReceiptFacts): Promise<string | null>;
  /** This process's current key first, then its previous keys, then the other processes' keys. */
  jwks(): Promise<{ keys: PublicJwk[] }>;
}

/**
 * The facilitator's attestation of a settlement: only what it verified on the ledger (network, transaction, ledger,
 * asset contract, atomic amount, payer, payTo, confirmation time, the fees its transaction bid) and the resource only
 * when it is cataloged. A
 * URL an x402 client merely named is never attested. Deterministic: every copy of one attestation is the same JWS.
 */
export function createSignedReceipts(deps: SignedReceiptsDeps): SignedReceipts {
  async function sign(receipt: ReceiptFacts): Promise<string | null> {
    if (receipt.status !== 'settled' || !receipt.settledAt || receipt.ledger === null) return null;
    const parties = await deps.partiesOf(receipt.paymentAttemptId);
    const asset = deps.assetContract(receipt.network, receipt.assetCode, receipt.assetIssuer);
    if (!parties || !asset) return null;
    const url = receipt.resourceId ? await deps.resourceUrlOf(receipt.resourceId) : null;
    const fees = deps.feesOf ? await deps.feesOf(receipt.paymentAttemptId) : null;
    return deps.signer.sign({
      network: receipt.network,
      transaction: receipt.transactionHash,
      ledger: receipt.ledger,
      asset,
      amount: receipt.amount.toString(),
      payer: parties.payer,
      payTo: parties.payTo,
      issuedAt: Math.floor(receipt.settledAt.getTime() / 1000),
      ...(receipt.resourceId && url ? { resource: { id: receipt.resourceId, url } } : {}),
      ...(fees ? { fees } : {}),
    });
  }
  return {
    sign,
    async forReader(principal, receipt) {
      if (principal.role === 'public' || !isOperatorOrSeller(principal, receipt.sellerId)) return null;
      return sign(receipt);
    },
    async jwks() {
      const own = deps.signer.jwks().keys;
      const shared = deps.sharedKeys ? await deps.sharedKeys() : [];
      const byKid = new Map(own.map((k) => [k.kid, k]));
      for (const k of shared) if (!byKid.has(k.kid)) byKid.set(k.kid, k);
      return { keys: [...byKid.values()] };
    },
  };
}
