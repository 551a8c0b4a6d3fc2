import DataLoader from 'dataloader';
import { Account, Keypair, rpc, xdr, type FeeBumpTransaction, type Transaction } from '@stellar/stellar-sdk';
import { jsonRpcClient, type JsonRpcClient } from './json-rpc-client';

/**
 * The Soroban RPC methods the service uses, over the one JSON-RPC client (json-rpc-client.ts), with the answers
 * decoded as the Stellar SDK's `rpc.Server` decodes them: `rpc.parseRawSimulation` for simulations (the SDK's own
 * parser), and the SDK's `xdr` types for what its other parsers (not exported by the SDK) would decode:
 * `TransactionResult` of sendTransaction and getTransaction, `LedgerEntryData` of getLedgerEntries.
 *
 * Ledger-entry reads are batched with `dataloader`: every lookup asked in the same tick (the channel pool checking
 * all its accounts at start, settles preparing at once, catalog requests reading wallet states at once, the
 * account and trustline of one wallet) goes out as ONE getLedgerEntries of the distinct keys (at most 200, the
 * RPC's limit per call). The loader caches nothing: every tick reads afresh (a sequence number is never reused).
 */
export interface RawLedgerEntry {
  key: string;
  xdr: string;
  lastModifiedLedgerSeq?: number;
  liveUntilLedgerSeq?: number;
}

/** Soroban RPC's limit of keys per getLedgerEntries. */
const MAX_KEYS_PER_CALL = 200;

export type TransactionLookup =
  | { status: 'SUCCESS'; ledger: number; createdAt: number; result: xdr.TransactionResult }
  | { status: 'FAILED'; ledger: number; createdAt: number; result: xdr.TransactionResult }
  | {
      status: 'NOT_FOUND';
      latestLedger: number;
      latestLedgerCloseTime?: number | string;
      oldestLedger: number;
      oldestLedgerCloseTime?: number | string;
    };

export class SorobanRpc {
  private readonly entries: DataLoader<string, RawLedgerEntry | null>;

  constructor(
    private readonly client: JsonRpcClient,
    private readonly timeoutMs: number,
  ) {
    this.entries = new DataLoader((keys) => this.readEntries(keys), { cache: false, maxBatchSize: MAX_KEYS_PER_CALL });
  }

  private call<T>(method: string, params?: unknown): Promise<T> {
    return this.client.call<T>(method, params, { timeoutMs: this.timeoutMs });
  }

  health(): Promise<{ status?: string; latestLedger?: number }> {
    return this.call('getHealth');
  }

  latestLedger(): Promise<{ sequence: number; protocolVersion?: number; id?: string }> {
    return this.call('getLatestLedger');
  }

  versionInfo(): Promise<Record<string, unknown>> {
    return this.call('getVersionInfo');
  }

  feeStats(): Promise<rpc.Api.GetFeeStatsResponse> {
    return this.call('getFeeStats');
  }

  /** simulateTransaction of `tx` (a read), parsed by the SDK. */
  async simulate(
    tx: Transaction | FeeBumpTransaction,
    authMode: 'enforce' | 'record' | 'record_allow_nonroot' = 'enforce',
  ): Promise<rpc.Api.SimulateTransactionResponse> {
    return rpc.parseRawSimulation(
      await this.call<rpc.Api.RawSimulateTransactionResponse>('simulateTransaction', {
        transaction: tx.toXDR(),
        authMode,
      }),
    );
  }

  /** simulateTransaction of a base64 envelope, the answer as the RPC sent it (verify decodes only what it reads). */
  simulateRaw(
    envelopeXdr: string,
    authMode: 'enforce' | 'record' | 'record_allow_nonroot' = 'enforce',
  ): Promise<rpc.Api.RawSimulateTransactionResponse> {
    return this.call('simulateTransaction', { transaction: envelopeXdr, authMode });
  }

  /** sendTransaction (sent once, never again by the client); the ledger's error result decoded when there is one. */
  async send(
    tx: Transaction | FeeBumpTransaction,
  ): Promise<{ status: rpc.Api.SendTransactionStatus; errorResult?: xdr.TransactionResult }> {
    const raw = await this.call<rpc.Api.RawSendTransactionResponse>('sendTransaction', { transaction: tx.toXDR() });
    return raw.errorResultXdr
      ? { status: raw.status, errorResult: xdr.TransactionResult.fromXDR(raw.errorResultXdr, 'base64') }
      : { status: raw.status };
  }

  async transaction(hash: string): Promise<TransactionLookup> {
    const raw = await this.call<rpc.Api.RawGetTransactionResponse>('getTransaction', { hash });
    if (raw.status === rpc.Api.GetTransactionStatus.NOT_FOUND || !raw.resultXdr) {
      return {
        status: 'NOT_FOUND',
        latestLedger: raw.latestLedger,
        latestLedgerCloseTime: raw.latestLedgerCloseTime,
        oldestLedger: raw.oldestLedger,
        oldestLedgerCloseTime: raw.oldestLedgerCloseTime,
      };
    }
    return {
      status: raw.status === rpc.Api.GetTransactionStatus.SUCCESS ? 'SUCCESS' : 'FAILED',
      ledger: raw.ledger as number,
      createdAt: Number(raw.createdAt),
      result: xdr.TransactionResult.fromXDR(raw.resultXdr, 'base64'),
    };
  }

  /** One ledger entry by key (base64 LedgerKey XDR), null when the ledger has none; batched per tick (see above). */
  entry(key: string): Promise<RawLedgerEntry | null> {
    return this.entries.load(key);
  }

  /** The account as `rpc.Server.getAccount` gives it (sequence number read now), or null when it does not exist. */
  async account(address: string): Promise<Account | null> {
    const found = await this.entry(accountKey(address));
    return found
      ? new Account(address, xdr.LedgerEntryData.fromXDR(found.xdr, 'base64').account().seqNum().toString())
      : null;
  }

  private async readEntries(keys: readonly string[]): Promise<Array<RawLedgerEntry | null>> {
    const distinct = [...new Set(keys)];
    const res = await this.call<{ entries?: RawLedgerEntry[] | null }>('getLedgerEntries', { keys: distinct });
    const byKey = new Map((res.entries ?? []).map((e) => [e.key, e]));
    return keys.map((k) => byKey.get(k) ?? null);
  }
}

/** The base64 LedgerKey of an account. */
export function accountKey(address: string): string {
  return xdr.LedgerKey.account(
    new xdr.LedgerKeyAccount({ accountId: Keypair.fromPublicKey(address).xdrAccountId() }),
  ).toXDR('base64');
}

const shared = new Map<string, SorobanRpc>();

/** The Soroban RPC of one URL with one deadline per call, shared in this process (one entry batcher per pair). */
export function sorobanRpc(url: string, timeoutMs: number): SorobanRpc {
  const id = `${timeoutMs} ${url}`;
  let s = shared.get(id);
  if (!s) shared.set(id, (s = new SorobanRpc(jsonRpcClient(url), timeoutMs)));
  return s;
}
