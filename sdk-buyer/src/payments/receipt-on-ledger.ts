/**
 * A receipt checked against the ledger itself (getTransaction and its transfer events), through the one Soroban RPC
 * reader of the SDK core. Not the signature checks of signed documents: those are in src/receipts.
 */
import { transferEventsOfTransaction, type TransferEvent } from './ledger-reads.js';
import { ledgerReaderOf } from '../core/soroban-rpc.js';
import { assetContractId, normalizeNetwork } from './requirements.js';
import { toStroops } from '../core/amounts.js';

export interface LedgerCheck {
  ok: boolean;
  /** getTransaction status: SUCCESS, FAILED or NOT_FOUND. */
  status: string;
  /** Ledger the transaction is in, per the RPC. */
  ledger: number | null;
  /** The transfer event of the transaction that matches the receipt (when one does). */
  transfer?: { asset: string; from: string; to: string; amount: string };
  /** Which receipt fields the transfer was checked against (payer and payTo only when known). */
  checked?: Array<'asset' | 'amount' | 'payer' | 'payTo'>;
  reason?: string;
}

/** What a receipt states about the transfer. Asset: its contract id, or code + issuer (derived per network). */
export interface ReceiptClaims {
  transactionHash: string;
  ledger?: number | null;
  network?: string;
  /** Decimal amount (our receipts), or `amountStroops` (atomic units, e.g. a facilitator attestation). */
  amount?: string;
  amountStroops?: string;
  asset?: string;
  assetCode?: string;
  assetIssuer?: string;
  payer?: string | null;
  payTo?: string | null;
}

/**
 * Checks a receipt against the ledger itself, trusting nothing the marketplace or the seller says: the transaction
 * `transactionHash` must be SUCCESS on the network behind `rpcUrl`, in the ledger the receipt states (when it states
 * one), and one of its `transfer` events must move exactly the receipt's amount of the receipt's asset contract
 * from `payer` to `payTo` (each checked when the receipt names it). Note: RPC nodes keep a retention window (about
 * a day on testnet); older hashes are NOT_FOUND.
 */
export async function verifyReceiptOnLedger(
  receipt: ReceiptClaims,
  rpcUrl: string,
  fetchFn: typeof globalThis.fetch = globalThis.fetch,
): Promise<LedgerCheck> {
  const network = receipt.network ?? 'stellar:testnet';
  const ledger = ledgerReaderOf(rpcUrl, fetchFn);
  const tx = await ledger.rpc<{
    status: string;
    ledger?: number;
    events?: { contractEventsXdr?: unknown };
    resultMetaXdr?: string;
  }>(network, 'getTransaction', { hash: receipt.transactionHash });
  const txLedger = typeof tx.ledger === 'number' ? tx.ledger : null;
  if (tx.status !== 'SUCCESS')
    return { ok: false, status: tx.status, ledger: txLedger, reason: `transaction is ${tx.status}` };
  if (receipt.ledger != null && txLedger !== receipt.ledger) {
    return {
      ok: false,
      status: tx.status,
      ledger: txLedger,
      reason: `transaction is in ledger ${txLedger}, the receipt says ${receipt.ledger}`,
    };
  }
  let asset: string | null = receipt.asset ?? null;
  if (!asset && receipt.assetCode)
    asset = assetContractId(receipt.assetCode, receipt.assetIssuer, normalizeNetwork(network));
  const stroops =
    receipt.amountStroops !== undefined
      ? BigInt(receipt.amountStroops)
      : receipt.amount !== undefined
        ? toStroops(receipt.amount)
        : null;
  if (!asset || stroops === null)
    return { ok: false, status: tx.status, ledger: txLedger, reason: 'the receipt names no asset or amount to check' };

  const checked: NonNullable<LedgerCheck['checked']> = ['asset', 'amount'];
  if (receipt.payer) checked.push('payer');
  if (receipt.payTo) checked.push('payTo');
  const transfers = transferEventsOfTransaction(tx);
  const matches = (t: TransferEvent) =>
    t.contractId === asset &&
    t.amount === stroops &&
    (!receipt.payer || t.from === receipt.payer) &&
    (!receipt.payTo || t.to === receipt.payTo);
  const found = transfers.find(matches);
  if (!found) {
    const seen = transfers.map((t) => `${t.amount} of ${t.contractId} ${t.from} -> ${t.to}`).join('; ') || 'none';
    return {
      ok: false,
      status: tx.status,
      ledger: txLedger,
      checked,
      reason: `no transfer event matches the receipt (transfers: ${seen})`,
    };
  }
  return {
    ok: true,
    status: tx.status,
    ledger: txLedger,
    checked,
    transfer: { asset: found.contractId, from: found.from, to: found.to, amount: found.amount.toString() },
  };
}
