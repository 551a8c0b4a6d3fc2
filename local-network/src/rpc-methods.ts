import { xdr } from '@stellar/stellar-sdk';
import { PROTOCOL_VERSION, RPC_VERSION, LEDGER_RETENTION_WINDOW } from './constants';
import { EventFilter, queryEvents } from './event-query';
import { feeStats } from './fee-stats';
import { FEE_STATS_WINDOW, LocalLedger, TransactionRecord } from './local-ledger';
import { RpcError } from './rpc-error';

/**
 * The Soroban RPC JSON-RPC methods, answering with the real wire shapes (base64 XDR, field names as the
 * stellar-sdk `rpc.Server` parsers expect): getHealth, getNetwork, getVersionInfo, getLatestLedger, getFeeStats,
 * getLedgerEntries, simulateTransaction, sendTransaction, getTransaction, getTransactions, getEvents.
 */

type Params = Record<string, unknown>;
type Method = (ledger: LocalLedger, params: Params, ctx: { friendbotUrl: string }) => unknown;

const MAX_LEDGER_KEYS = 200;
const DEFAULT_PAGE = 100;
const MAX_PAGE = 10_000;

function str(params: Params, name: string, required = true): string | undefined {
  const value = params[name];
  if (value === undefined || value === null) {
    if (required) throw new RpcError(RpcError.invalidParams, `missing parameter "${name}"`);
    return undefined;
  }
  if (typeof value !== 'string') throw new RpcError(RpcError.invalidParams, `parameter "${name}" must be a string`);
  return value;
}

function num(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    throw new RpcError(RpcError.invalidParams, `parameter "${name}" must be a non-negative integer`);
  return n;
}

function pageLimit(pagination: unknown): { cursor?: string; limit: number } {
  const p = (pagination ?? {}) as { cursor?: unknown; limit?: unknown };
  const limit = num(p.limit, 'pagination.limit') ?? DEFAULT_PAGE;
  if (limit > MAX_PAGE) throw new RpcError(RpcError.invalidParams, `limit must not exceed ${MAX_PAGE}`);
  if (p.cursor !== undefined && typeof p.cursor !== 'string')
    throw new RpcError(RpcError.invalidParams, 'pagination.cursor must be a string');
  return { cursor: p.cursor as string | undefined, limit: limit === 0 ? DEFAULT_PAGE : limit };
}

function retention(ledger: LocalLedger) {
  return {
    latestLedger: ledger.latest.sequence,
    latestLedgerCloseTime: ledger.latest.closeTime,
    oldestLedger: ledger.oldest.sequence,
    oldestLedgerCloseTime: ledger.oldest.closeTime,
  };
}

function checkStartLedger(ledger: LocalLedger, startLedger: number): void {
  if (startLedger < ledger.oldest.sequence || startLedger > ledger.latest.sequence) {
    throw new RpcError(
      RpcError.invalidRequest,
      `startLedger must be between the oldest ledger: ${ledger.oldest.sequence} and the latest ledger: ` +
        `${ledger.latest.sequence} for this rpc instance`,
    );
  }
}

function transactionInfo(tx: TransactionRecord) {
  return {
    status: tx.status,
    txHash: tx.hash,
    applicationOrder: tx.applicationOrder,
    feeBump: tx.feeBump,
    envelopeXdr: tx.envelopeXdr,
    resultXdr: tx.resultXdr,
    resultMetaXdr: tx.resultMetaXdr,
    ledger: tx.ledger,
    createdAt: tx.createdAt,
    diagnosticEventsXdr: tx.diagnosticEventsXdr.length > 0 ? tx.diagnosticEventsXdr : undefined,
    events: { transactionEventsXdr: tx.transactionEventsXdr, contractEventsXdr: tx.contractEventsXdr },
  };
}

const toid = (tx: TransactionRecord): string =>
  ((BigInt(tx.ledger) << 32n) | (BigInt(tx.applicationOrder) << 12n)).toString();

export const rpcMethods: Record<string, Method> = {
  getHealth: (ledger) => ({
    status: 'healthy',
    latestLedger: ledger.latest.sequence,
    oldestLedger: ledger.oldest.sequence,
    ledgerRetentionWindow: LEDGER_RETENTION_WINDOW,
  }),

  getNetwork: (ledger, _params, ctx) => ({
    friendbotUrl: ctx.friendbotUrl,
    passphrase: ledger.passphrase,
    protocolVersion: PROTOCOL_VERSION,
  }),

  getVersionInfo: () => ({
    version: RPC_VERSION,
    commitHash: 'local-simulation',
    buildTimestamp: '',
    captiveCoreVersion: 'local-simulation',
    protocolVersion: PROTOCOL_VERSION,
    commit_hash: 'local-simulation',
    build_timestamp: '',
    captive_core_version: 'local-simulation',
    protocol_version: PROTOCOL_VERSION,
  }),

  getLatestLedger: (ledger) => ({
    id: ledger.latest.hash,
    sequence: ledger.latest.sequence,
    protocolVersion: PROTOCOL_VERSION,
  }),

  getFeeStats: (ledger) =>
    feeStats(
      ledger.feeSamples,
      ledger.minInclusionFee,
      ledger.latest.sequence,
      FEE_STATS_WINDOW,
      ledger.sorobanMinInclusionFee,
    ),

  getLedgerEntries: (ledger, params) => {
    const keys = params.keys;
    if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string'))
      throw new RpcError(RpcError.invalidParams, 'keys must be an array of base64 LedgerKeys');
    if (keys.length > MAX_LEDGER_KEYS)
      throw new RpcError(
        RpcError.invalidParams,
        `key count (${keys.length}) exceeds maximum supported (${MAX_LEDGER_KEYS})`,
      );
    const entries = [];
    for (const encoded of keys as string[]) {
      let key: xdr.LedgerKey;
      try {
        key = xdr.LedgerKey.fromXDR(encoded, 'base64');
      } catch {
        throw new RpcError(RpcError.invalidParams, `cannot unmarshal key value ${encoded}`);
      }
      const found = ledger.ledgerEntry(key);
      if (!found) continue;
      entries.push({
        key: encoded,
        xdr: found.data.toXDR('base64'),
        lastModifiedLedgerSeq: found.lastModifiedLedgerSeq,
        ...(found.liveUntilLedgerSeq !== undefined && { liveUntilLedgerSeq: found.liveUntilLedgerSeq }),
      });
    }
    return { entries, latestLedger: ledger.latest.sequence };
  },

  // useUpgradedAuth (Stellar RPC 27.1): recording mode produces CAP-71 V2 address credentials instead of V1 ones.
  simulateTransaction: (ledger, params) =>
    ledger.simulate(
      str(params, 'transaction') as string,
      str(params, 'authMode', false),
      params.useUpgradedAuth === true,
    ),

  sendTransaction: (ledger, params) => {
    const sent = ledger.submit(str(params, 'transaction') as string);
    return { ...sent, latestLedger: ledger.latest.sequence, latestLedgerCloseTime: ledger.latest.closeTime };
  },

  getTransaction: (ledger, params) => {
    const txHash = str(params, 'hash') as string;
    if (!/^[0-9a-f]{64}$/i.test(txHash))
      throw new RpcError(RpcError.invalidParams, 'unexpected hash length: expected 64 hex characters');
    const tx = ledger.transaction(txHash.toLowerCase());
    if (!tx) return { status: 'NOT_FOUND', txHash, ...retention(ledger) };
    return { ...retention(ledger), ...transactionInfo(tx) };
  },

  getTransactions: (ledger, params) => {
    const { cursor, limit } = pageLimit(params.pagination);
    const startLedger = num(params.startLedger, 'startLedger');
    if (cursor === undefined) {
      if (startLedger === undefined)
        throw new RpcError(RpcError.invalidParams, 'startLedger or pagination.cursor is required');
      checkStartLedger(ledger, startLedger);
    }
    const all = ledger.transactionsInOrder();
    const page = all
      .filter((tx) => (cursor !== undefined ? BigInt(toid(tx)) > BigInt(cursor) : tx.ledger >= (startLedger ?? 0)))
      .slice(0, limit);
    const r = retention(ledger);
    return {
      transactions: page.map(transactionInfo),
      latestLedger: r.latestLedger,
      latestLedgerCloseTimestamp: r.latestLedgerCloseTime,
      oldestLedger: r.oldestLedger,
      oldestLedgerCloseTimestamp: r.oldestLedgerCloseTime,
      cursor: page.length > 0 ? toid(page[page.length - 1]) : (cursor ?? ''),
    };
  },

  getEvents: (ledger, params) => {
    const { cursor, limit } = pageLimit(params.pagination);
    const startLedger = num(params.startLedger, 'startLedger');
    const endLedger = num(params.endLedger, 'endLedger');
    if (cursor === undefined) {
      if (startLedger === undefined) throw new RpcError(RpcError.invalidParams, 'startLedger must be positive');
      checkStartLedger(ledger, startLedger);
    }
    const filters = (Array.isArray(params.filters) ? params.filters : []) as EventFilter[];
    const page = queryEvents(ledger.allEvents(), { startLedger, endLedger, filters, cursor, limit });
    const r = retention(ledger);
    return {
      events: page.events,
      cursor: page.cursor,
      latestLedger: r.latestLedger,
      oldestLedger: r.oldestLedger,
      latestLedgerCloseTime: String(r.latestLedgerCloseTime),
      oldestLedgerCloseTime: String(r.oldestLedgerCloseTime),
    };
  },
};
