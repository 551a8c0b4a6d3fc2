import { isOperatorOrSeller, type Principal } from '../auth/principal';
import type { ReceiptRecord } from '../facilitator/types';

/** What a signed receipt is made from (a ReceiptRecord, or a receipt as the API presents it). */
export type ReceiptFacts = Pick<ReceiptRecord, 'paymentAttemptId' | 'network' | 'transactionHash' | 'status' | 'settledAt'> & {
  resourceId: string | null;
  sellerId: string | null;
};
import type { PublicJwk, ReceiptSigner } from './receipt-signer';

export interface SignedReceiptsDeps {
  signer: ReceiptSigner;
  /** The payer of a payment attempt; null when unknown. */
  payerOf(paymentAttemptId: string): Promise<string | null>;
  /** The cataloged URL of a resource; null when unknown. */
  resourceUrlOf(resourceId: string): Promise<string | null>;
  /**
   * The public keys other processes sharing the database sign with (absent: this process's keys only). They are
   * published too, so a receipt signed by any process verifies against the key set of any other.
   */
  sharedKeys?(): Promise<PublicJwk[]>;
}

export interface SignedReceipts {
  /** The signed receipt of a settled receipt (null while it is not settled). */
  sign(receipt: ReceiptFacts, payer: string, paidUrl?: string | null): Promise<string | null>;
  /** The signed receipt for this reader: only the receipt's seller and the operator get it (it names the payer). */
  forReader(principal: Principal, receipt: ReceiptFacts): Promise<string | null>;
  /** This process's current key first, then its previous keys, then the other processes' keys. */
  jwks(): Promise<{ keys: PublicJwk[] }>;
  /** The payer of a payment attempt (for callers that already hold the payment). */
  payerOf(paymentAttemptId: string): Promise<string | null>;
}

/**
 * Who gets a signed receipt and what it says. The resource URL is the cataloged resource's URL when the payment
 * is linked to one (so every copy of one receipt is the same JWS), else the URL the x402 client paid for, else a
 * URN naming the payment attempt. `issuedAt` is when the settlement was confirmed.
 */
export function createSignedReceipts(deps: SignedReceiptsDeps): SignedReceipts {
  async function sign(receipt: ReceiptFacts, payer: string, paidUrl?: string | null): Promise<string | null> {
    if (receipt.status !== 'settled' || !receipt.settledAt) return null;
    const cataloged = receipt.resourceId ? await deps.resourceUrlOf(receipt.resourceId) : null;
    return deps.signer.sign({
      network: receipt.network,
      resourceUrl: cataloged ?? paidUrl ?? `urn:paid-api-marketplace:payment:${receipt.paymentAttemptId}`,
      payer,
      issuedAt: Math.floor(receipt.settledAt.getTime() / 1000),
      transaction: receipt.transactionHash,
    });
  }
  return {
    sign,
    async forReader(principal, receipt) {
      if (principal.role === 'public' || !isOperatorOrSeller(principal, receipt.sellerId)) return null;
      const payer = await deps.payerOf(receipt.paymentAttemptId);
      return payer ? sign(receipt, payer) : null;
    },
    async jwks() {
      const own = deps.signer.jwks().keys;
      const shared = deps.sharedKeys ? await deps.sharedKeys() : [];
      const byKid = new Map(own.map((k) => [k.kid, k]));
      for (const k of shared) if (!byKid.has(k.kid)) byKid.set(k.kid, k);
      return { keys: [...byKid.values()] };
    },
    payerOf: (id) => deps.payerOf(id),
  };
}
