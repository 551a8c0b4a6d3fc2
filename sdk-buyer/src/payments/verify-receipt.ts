import { rpc } from '@stellar/stellar-sdk';

export interface LedgerCheck {
  ok: boolean;
  /** getTransaction status: SUCCESS, FAILED or NOT_FOUND. */
  status: string;
  /** Ledger the transaction is in, per the RPC. */
  ledger: number | null;
  reason?: string;
}

/**
 * Checks a receipt against the ledger itself, trusting nothing the marketplace says: the transaction
 * `transactionHash` must be SUCCESS on the network behind `rpcUrl`, in the ledger the receipt states (when it
 * states one). Note: RPC nodes keep a retention window (about a day on testnet); older hashes are NOT_FOUND.
 */
export async function verifyReceiptOnLedger(receipt: { transactionHash: string; ledger?: number | null }, rpcUrl: string): Promise<LedgerCheck> {
  const server = new rpc.Server(rpcUrl, { allowHttp: rpcUrl.startsWith('http://') });
  const tx = await server.getTransaction(receipt.transactionHash);
  if (tx.status !== rpc.Api.GetTransactionStatus.SUCCESS) {
    return { ok: false, status: tx.status, ledger: 'ledger' in tx && typeof tx.ledger === 'number' ? tx.ledger : null, reason: `transaction is ${tx.status}` };
  }
  if (receipt.ledger != null && tx.ledger !== receipt.ledger) {
    return { ok: false, status: tx.status, ledger: tx.ledger, reason: `transaction is in ledger ${tx.ledger}, the receipt says ${receipt.ledger}` };
  }
  return { ok: true, status: tx.status, ledger: tx.ledger };
}
