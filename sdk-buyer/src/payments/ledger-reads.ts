/**
 * What the buyer SDK asks the ledger itself (Soroban JSON-RPC, no trust in the marketplace or the seller):
 * the latest ledger, whether an authorization's nonce was consumed (getLedgerEntries), transfers from a payer to a
 * payee in a ledger range (getEvents), and the transfer events of one transaction (getTransaction). The calls go
 * through the one Soroban RPC reader of the SDK core (core/soroban-rpc.ts).
 */
import { Address, StrKey, scValToNative, xdr } from '@stellar/stellar-sdk';
import { ledgerEntriesFound, type LedgerReader } from '../core/soroban-rpc.js';

/** The ledger key of a consumed Soroban authorization nonce of `address`. */
export function nonceLedgerKey(address: string, nonce: string): xdr.LedgerKey {
  return xdr.LedgerKey.contractData(
    new xdr.LedgerKeyContractData({
      contract: new Address(address).toScAddress(),
      key: xdr.ScVal.scvLedgerKeyNonce(new xdr.ScNonceKey({ nonce: xdr.Int64.fromString(nonce) })),
      durability: xdr.ContractDataDurability.temporary(),
    }),
  );
}

/** True when the ledger holds the nonce entry: the authorization was used (the entry lives until its expiry). */
export async function consumedNonce(
  ledger: LedgerReader,
  c: { network: string; payer: string; nonce: string | null },
): Promise<boolean> {
  if (!c.nonce) return false;
  const key = nonceLedgerKey(c.payer, c.nonce).toXDR('base64');
  return (await ledgerEntriesFound(ledger, c.network, [key])).size > 0;
}

export interface TransferEvent {
  contractId: string;
  from: string;
  to: string;
  amount: bigint;
}

/** A SAC `transfer` event (topics [transfer, from, to, asset?], data i128 or {amount, ...}), else null. */
export function readTransferEvent(event: xdr.ContractEvent): TransferEvent | null {
  try {
    const contract = event.contractId();
    if (!contract) return null;
    const body = event.body().v0();
    const topics = body.topics();
    if (topics.length < 3 || topics[0].switch().name !== 'scvSymbol' || topics[0].sym().toString() !== 'transfer')
      return null;
    const data = scValToNative(body.data()) as unknown;
    const amount =
      typeof data === 'bigint'
        ? data
        : data && typeof data === 'object' && typeof (data as { amount?: unknown }).amount === 'bigint'
          ? (data as { amount: bigint }).amount
          : null;
    if (amount === null) return null;
    return {
      contractId: StrKey.encodeContract(contract as unknown as Buffer),
      from: Address.fromScVal(topics[1]).toString(),
      to: Address.fromScVal(topics[2]).toString(),
      amount,
    };
  } catch {
    return null;
  }
}

/**
 * The first transfer payer -> payTo of exactly `stroops` in `asset`, between the ledger the authorization was
 * signed at and its expiry, whose transaction is not in `claimed`. Its transaction hash, or null.
 */
export async function transferOnLedger(
  ledger: LedgerReader,
  c: {
    network: string;
    asset: string;
    payer: string;
    payTo: string;
    stroops: string;
    signedAtLedger: number | null;
    expiresAtLedger: number | null;
  },
  claimed: Set<string>,
): Promise<string | null> {
  if (c.signedAtLedger === null || c.expiresAtLedger === null) throw new Error('unknown ledger range');
  const topic = [xdr.ScVal.scvSymbol('transfer'), new Address(c.payer).toScVal(), new Address(c.payTo).toScVal()].map(
    (v) => v.toXDR('base64'),
  );
  const filters = [{ type: 'contract', contractIds: [c.asset], topics: [[...topic, '*'], topic] }];
  let cursor: string | undefined;
  for (let page = 0; page < 20; page++) {
    const params: Record<string, unknown> = cursor
      ? { filters, pagination: { cursor, limit: 100 } }
      : { startLedger: c.signedAtLedger, filters, pagination: { limit: 100 } };
    const result = await ledger.rpc<{
      events?: Array<{ ledger: number; txHash: string; value: string; contractId: string; topic: string[] }>;
      cursor?: string;
    }>(c.network, 'getEvents', params);
    const events = result.events ?? [];
    for (const e of events) {
      if (e.ledger > c.expiresAtLedger) return null;
      let amount: unknown;
      try {
        amount = scValToNative(xdr.ScVal.fromXDR(e.value, 'base64'));
      } catch {
        continue;
      }
      const value = typeof amount === 'bigint' ? amount : (amount as { amount?: unknown } | null)?.amount;
      if (value === BigInt(c.stroops) && !claimed.has(e.txHash)) return e.txHash;
    }
    if (events.length < 100 || !result.cursor) return null;
    cursor = result.cursor;
  }
  throw new Error('too many events to search');
}

/** The transfer events of a transaction as getTransaction reports them (events, else the result meta). */
export function transferEventsOfTransaction(tx: {
  events?: { contractEventsXdr?: unknown };
  resultMetaXdr?: string;
}): TransferEvent[] {
  const out: TransferEvent[] = [];
  const nested = tx.events?.contractEventsXdr;
  if (Array.isArray(nested)) {
    for (const group of nested) {
      for (const e of Array.isArray(group) ? group : [group]) {
        if (typeof e !== 'string') continue;
        const t = readTransferEvent(xdr.ContractEvent.fromXDR(e, 'base64'));
        if (t) out.push(t);
      }
    }
    if (out.length) return out;
  }
  if (typeof tx.resultMetaXdr === 'string') {
    const meta = xdr.TransactionMeta.fromXDR(tx.resultMetaXdr, 'base64');
    const arm = meta.switch() as unknown as number;
    const events: xdr.ContractEvent[] = [];
    if (arm === 3) events.push(...(meta.v3().sorobanMeta()?.events() ?? []));
    if (arm === 4) for (const op of meta.v4().operations()) events.push(...op.events());
    for (const e of events) {
      const t = readTransferEvent(e);
      if (t) out.push(t);
    }
  }
  return out;
}
