import {
  Account,
  Address,
  Keypair,
  Operation,
  SorobanDataBuilder,
  StrKey,
  TransactionBuilder,
  hash,
  nativeToScVal,
  xdr,
} from '@stellar/stellar-sdk';
import { AssetRegistry, RegisteredAsset } from './asset-registry';
import { deployAccountContract } from './account-contract';
import { availableNative, balanceOf } from './balances';
import { BASE_FEE, BASE_RESERVE, LEDGER_RETENTION_WINDOW, MAX_INT64 } from './constants';
import { EventRecord, eventId } from './event-query';
import { readLedgerEntry } from './ledger-entries';
import { LedgerRecord, LedgerStore, entryKey, getAccount, getTrustline } from './ledger-state';
import { AppliedTransaction, applyTransaction } from './transaction-apply';
import { ParsedTransaction, parseTransaction } from './transaction-envelope';
import { RawSimulation, simulateTransaction } from './transaction-simulate';
import { inclusionFeePerOperation, validateTransaction } from './transaction-validate';
import { FeeSample } from './fee-stats';
import { feeBumpResult, transactionResult } from './transaction-results';
import { errorDiagnostic } from './contract-events';
import { RpcError } from './rpc-error';
import { formatAmount } from './amount';
import { AccountFlags } from './set-options';
import { newTrustlineFlags } from './operation-apply';
import { MAINTAIN_LIABILITIES, changeTrustlineFlags } from './trustline-flags';
import { TRUSTLINE_AUTHORIZED } from './balances';

/**
 * The simulated ledger: committed state, the queue of accepted transactions, closed ledgers, applied
 * transactions and their events. Everything the RPC methods and the conveniences need goes through here.
 */

export interface LedgerHeaderRecord {
  sequence: number;
  /** Unix seconds. */
  closeTime: number;
  /** Hex. */
  hash: string;
}

export interface TransactionRecord {
  hash: string;
  status: 'SUCCESS' | 'FAILED';
  ledger: number;
  createdAt: number;
  applicationOrder: number;
  feeBump: boolean;
  envelopeXdr: string;
  resultXdr: string;
  resultMetaXdr: string;
  diagnosticEventsXdr: string[];
  transactionEventsXdr: string[];
  contractEventsXdr: string[][];
}

/** Everything that survives a restart. */
export interface LedgerSnapshot {
  ledgers: LedgerHeaderRecord[];
  entries: Array<[string, LedgerRecord]>;
  transactions: TransactionRecord[];
  events: EventRecord[];
}

export type SendStatus = 'PENDING' | 'DUPLICATE' | 'TRY_AGAIN_LATER' | 'ERROR';

export interface SendResult {
  status: SendStatus;
  hash: string;
  errorResultXdr?: string;
}

/** 10,000 XLM, enough reserve and fees for an issuer. */
const ISSUER_STARTING_BALANCE = 100_000_000_000n;
/** What the root treasury holds of each issued asset at genesis (the faucet pays from it). */
const TREASURY_BALANCE = MAX_INT64 / 2n;
const wallClockSeconds = (): number => Math.floor(Date.now() / 1000);
/** Friendbot and faucet transactions may land at any time. */
const CONVENIENCE_TX_TIMEOUT = 0;
/** How many recent ledgers getFeeStats summarises (the real RPC's Soroban fee-stats window). */
export const FEE_STATS_WINDOW = 50;

export type FeeProfile = 'local' | 'pubnet';
/** Pubnet's Soroban fee distribution as reproduced by the 'pubnet' fee profile (every percentile p10-p99 at 200). */
export const PUBNET_PROFILE = { sorobanInclusionFee: 200n, transactionsPerLedger: 20 } as const;

export class LocalLedger {
  private readonly store: LedgerStore;
  private readonly ledgers: LedgerHeaderRecord[];
  private readonly transactions = new Map<string, TransactionRecord>();
  private readonly events: EventRecord[];
  private pending: ParsedTransaction[] = [];
  private readonly pendingSources = new Set<string>();
  private readonly networkId: Buffer;
  /** How many transactions the latest ledger holds (friendbot/faucet transactions are appended to it). */
  private latestTxCount = 0;
  /** Surge pricing: the minimum inclusion fee per operation now in force (never below BASE_FEE). */
  minInclusionFee = BASE_FEE;
  /** Seconds added to the wall clock: lets tests close ledgers past a transaction's maxTime without waiting. */
  private clockOffsetSeconds = 0;
  /** Inclusion fee bids of recently applied transactions, for getFeeStats. */
  readonly feeSamples: FeeSample[] = [];
  /** The fee profile (setFeeProfile): 'pubnet' adds pubnet's Soroban traffic to every ledger and its 200-stroop floor.
   * */
  feeProfile: FeeProfile = 'local';
  /** The Soroban lane's minimum inclusion fee per operation (BASE_FEE, or the pubnet profile's). */
  sorobanMinInclusionFee = BASE_FEE;

  constructor(
    readonly passphrase: string,
    readonly registry: AssetRegistry,
    private readonly root: Keypair,
    snapshot?: LedgerSnapshot,
  ) {
    this.networkId = hash(Buffer.from(passphrase));
    this.store = new LedgerStore(snapshot?.entries ?? []);
    this.ledgers = snapshot?.ledgers.length ? [...snapshot.ledgers] : [this.genesisHeader()];
    this.events = snapshot?.events ? [...snapshot.events] : [];
    for (const tx of snapshot?.transactions ?? []) this.transactions.set(tx.hash, tx);
    this.latestTxCount = [...this.transactions.values()].filter((t) => t.ledger === this.latest.sequence).length;
    this.ensureGenesisAccounts();
  }

  /** The network clock (unix seconds): the wall clock plus what advanceClock() added. */
  now(): number {
    return wallClockSeconds() + this.clockOffsetSeconds;
  }

  /** Moves the network clock forward; the next ledger closes at least that much later. */
  advanceClock(seconds: number): void {
    if (!Number.isInteger(seconds) || seconds < 0)
      throw new Error('advanceClock takes a non-negative whole number of seconds');
    this.clockOffsetSeconds += seconds;
  }

  /** Surge pricing: transactions bidding less than `stroops` per operation are refused with txInsufficientFee. */
  setMinimumInclusionFee(stroops: bigint): void {
    if (stroops < BASE_FEE)
      throw new Error(`the minimum inclusion fee cannot be below the base fee (${BASE_FEE} stroops)`);
    this.minInclusionFee = stroops;
  }

  /**
   * Fee profile (local convenience, issue #30). 'pubnet' reproduces pubnet's Soroban fee distribution: every closed
   * ledger also carries PUBNET_PROFILE.transactionsPerLedger Soroban transactions of other users bidding
   * PUBNET_PROFILE.sorobanInclusionFee (200 stroops), the getFeeStats window is filled with them at once (its
   * `sorobanInclusionFee` p10-p99 read 200), and Soroban transactions bidding less are refused with
   * txInsufficientFee (on pubnet they would wait behind the others). Classic transactions keep the base fee. 'local'
   * (the default) removes them: fees come from the network's own traffic only.
   */
  setFeeProfile(profile: FeeProfile): void {
    if (profile !== 'local' && profile !== 'pubnet')
      throw new Error(`unknown fee profile ${String(profile)} (expected "local" or "pubnet")`);
    this.feeProfile = profile;
    for (let i = this.feeSamples.length - 1; i >= 0; i -= 1)
      if (this.feeSamples[i].background) this.feeSamples.splice(i, 1);
    this.sorobanMinInclusionFee = profile === 'pubnet' ? PUBNET_PROFILE.sorobanInclusionFee : BASE_FEE;
    if (profile !== 'pubnet') return;
    const latest = this.latest.sequence;
    for (let ledger = Math.max(1, latest - FEE_STATS_WINDOW + 1); ledger <= latest; ledger += 1)
      this.addBackgroundFees(ledger);
  }

  private addBackgroundFees(ledger: number): void {
    for (let i = 0; i < PUBNET_PROFILE.transactionsPerLedger; i += 1)
      this.feeSamples.push({ ledger, soroban: true, fee: PUBNET_PROFILE.sorobanInclusionFee, background: true });
  }

  private validationContext(closeTime: number, ledgerSeq: number) {
    return {
      view: this.store,
      closeTime,
      ledgerSeq,
      minInclusionFee: this.minInclusionFee,
      sorobanMinInclusionFee: this.sorobanMinInclusionFee,
    };
  }

  private genesisHeader(): LedgerHeaderRecord {
    return {
      sequence: 1,
      closeTime: wallClockSeconds(),
      hash: hash(Buffer.from(`local-network genesis ${this.passphrase}`)).toString('hex'),
    };
  }

  /**
   * The root (friendbot) account holds the XLM supply and, as the network's treasury, a trustline with a large
   * balance of every issued asset: the faucet pays from it, so no issuer secret is needed (the local network hosts
   * Circle's testnet USDC, whose issuer nobody here can sign for). Issuer accounts exist so trustlines and SAC
   * transfers work. Missing entries are created, so an asset added after a restart gets its issuer and treasury.
   */
  private ensureGenesisAccounts(): void {
    const genesis = { kind: 'account' as const, seqNum: 1n << 32n, numSubEntries: 0, lastModified: 1 };
    const rootId = this.root.publicKey();
    const wanted: Array<[string, bigint]> = [
      [rootId, MAX_INT64 / 2n],
      ...this.registry.issued().map((a): [string, bigint] => [a.issuer, ISSUER_STARTING_BALANCE]),
    ];
    for (const [accountId, balance] of wanted) {
      if (!getAccount(this.store, accountId)) this.store.set(entryKey.account(accountId), { ...genesis, balance });
    }
    // Issuers can freeze trustlines (AUTH_REVOCABLE), as Circle's USDC issuer can.
    for (const asset of this.registry.issued()) {
      const issuer = getAccount(this.store, asset.issuer)!;
      if (issuer.flags === undefined)
        this.store.set(entryKey.account(asset.issuer), { ...issuer, flags: AccountFlags.authRevocable });
    }
    for (const asset of this.registry.issued()) {
      if (getTrustline(this.store, rootId, asset.assetId)) continue;
      const root = getAccount(this.store, rootId)!;
      this.store.set(entryKey.trustline(rootId, asset.assetId), {
        kind: 'trustline',
        balance: TREASURY_BALANCE,
        limit: MAX_INT64,
        lastModified: 1,
      });
      this.store.set(entryKey.account(rootId), { ...root, numSubEntries: root.numSubEntries + 1 });
    }
  }

  get latest(): LedgerHeaderRecord {
    return this.ledgers[this.ledgers.length - 1];
  }

  get oldest(): LedgerHeaderRecord {
    return this.ledgers[0];
  }

  snapshot(): LedgerSnapshot {
    return {
      ledgers: [...this.ledgers],
      entries: [...this.store.all()],
      transactions: [...this.transactions.values()],
      events: [...this.events],
    };
  }

  simulate(envelopeXdr: string, authMode?: string, upgradedAuth = false): RawSimulation {
    return simulateTransaction(
      {
        store: this.store,
        registry: this.registry,
        passphrase: this.passphrase,
        networkId: this.networkId,
        latestLedger: this.latest.sequence,
      },
      envelopeXdr,
      authMode,
      upgradedAuth,
    );
  }

  /** sendTransaction: validates now, queues for the next ledger close. */
  submit(envelopeXdr: string): SendResult {
    let tx: ParsedTransaction;
    try {
      tx = parseTransaction(envelopeXdr, this.passphrase);
    } catch (error) {
      throw new RpcError(RpcError.invalidParams, `invalid transaction: ${(error as Error).message}`);
    }
    if (this.pending.some((p) => p.hash === tx.hash)) return { status: 'DUPLICATE', hash: tx.hash };
    if (this.pendingSources.has(tx.source)) return { status: 'TRY_AGAIN_LATER', hash: tx.hash };
    const validation = validateTransaction(tx, this.validationContext(this.now(), this.latest.sequence + 1));
    if (!validation.ok) return { status: 'ERROR', hash: tx.hash, errorResultXdr: validation.result.toXDR('base64') };
    this.pending.push(tx);
    this.pendingSources.add(tx.source);
    return { status: 'PENDING', hash: tx.hash };
  }

  transaction(txHash: string): TransactionRecord | undefined {
    return this.transactions.get(txHash);
  }

  pendingCount(): number {
    return this.pending.length;
  }

  /**
   * Closes one ledger, applying the queued transactions in arrival order; returns the new sequence. As in
   * stellar-core, a queued transaction that is no longer valid for this ledger (past its maxTime or maxLedger,
   * stale sequence, fee no longer payable, ...) is dropped from the queue: it is never included in any ledger and
   * getTransaction keeps answering NOT_FOUND for it. One only outbid by a later surge stays queued.
   */
  closeLedger(): number {
    const previous = this.latest;
    const header = { sequence: previous.sequence + 1, closeTime: Math.max(previous.closeTime, this.now()), hash: '' };
    const queue = this.pending;
    this.pending = [];
    this.pendingSources.clear();
    this.latestTxCount = 0;
    this.ledgers.push(header);
    const included = queue.filter((tx) => {
      const applied = this.applySafely(tx, header);
      if (applied.status !== 'DROPPED') {
        this.record(tx, applied, header);
        return true;
      }
      // Outbid by a surge raised after it was accepted: it waits in the queue, as in stellar-core, until the
      // minimum comes back down or its time bound passes.
      if (applied.result.result().switch().name === 'txInsufficientFee') this.requeue(tx);
      return false;
    });
    this.sampleFees(included, header.sequence);
    header.hash = hash(
      Buffer.from([previous.hash, header.sequence, header.closeTime, ...included.map((t) => t.hash)].join('|')),
    ).toString('hex');
    this.store.evictExpiredNonces(header.sequence + 1);
    this.prune();
    return header.sequence;
  }

  private requeue(tx: ParsedTransaction): void {
    this.pending.push(tx);
    this.pendingSources.add(tx.source);
  }

  private sampleFees(included: ParsedTransaction[], ledger: number): void {
    for (const tx of included)
      this.feeSamples.push({ ledger, soroban: tx.sorobanData !== undefined, fee: inclusionFeePerOperation(tx) });
    if (this.feeProfile === 'pubnet') this.addBackgroundFees(ledger);
    const oldestKept = ledger - FEE_STATS_WINDOW + 1;
    const firstKept = this.feeSamples.findIndex((s) => s.ledger >= oldestKept);
    this.feeSamples.splice(0, firstKept < 0 ? this.feeSamples.length : firstKept);
  }

  /** A bug in the simulator must not stop the ledger: the transaction is recorded FAILED with txInternalError. */
  private applySafely(tx: ParsedTransaction, header: LedgerHeaderRecord): AppliedTransaction {
    try {
      return applyTransaction(this.applyContext(header), tx);
    } catch (error) {
      const outcome = { kind: 'code', code: 'txInternalError' } as const;
      const result = tx.feeBump ? feeBumpResult(0n, tx.innerHash, outcome) : transactionResult(0n, outcome);
      const meta = new xdr.TransactionMeta(
        4,
        new xdr.TransactionMetaV4({
          ext: new xdr.ExtensionPoint(0),
          txChangesBefore: [],
          operations: [],
          txChangesAfter: [],
          sorobanMeta: null,
          events: [],
          diagnosticEvents: [errorDiagnostic(`local network internal error: ${(error as Error).message}`)],
        }),
      );
      return { status: 'FAILED', result, meta, contractEvents: [], transactionEvents: [], diagnosticEvents: [] };
    }
  }

  private applyContext(header: LedgerHeaderRecord) {
    return {
      store: this.store,
      registry: this.registry,
      passphrase: this.passphrase,
      networkId: this.networkId,
      ledgerSeq: header.sequence,
      closeTime: header.closeTime,
      minInclusionFee: this.minInclusionFee,
      sorobanMinInclusionFee: this.sorobanMinInclusionFee,
    };
  }

  private record(tx: ParsedTransaction, applied: AppliedTransaction, header: LedgerHeaderRecord): TransactionRecord {
    this.latestTxCount += 1;
    const applicationOrder = this.latestTxCount;
    const record: TransactionRecord = {
      hash: tx.hash,
      status: applied.status === 'SUCCESS' ? 'SUCCESS' : 'FAILED',
      ledger: header.sequence,
      createdAt: header.closeTime,
      applicationOrder,
      feeBump: tx.feeBump !== undefined,
      envelopeXdr: tx.envelopeXdr,
      resultXdr: applied.result.toXDR('base64'),
      resultMetaXdr: applied.meta.toXDR('base64'),
      diagnosticEventsXdr: applied.diagnosticEvents.map((e) => e.toXDR('base64')),
      transactionEventsXdr: applied.transactionEvents.map((e) => e.toXDR('base64')),
      contractEventsXdr: applied.contractEvents.map((op) => op.map((e) => e.toXDR('base64'))),
    };
    this.transactions.set(tx.hash, record);
    const closedAt = new Date(header.closeTime * 1000).toISOString().replace('.000Z', 'Z');
    applied.contractEvents.forEach((opEvents, operationIndex) =>
      opEvents.forEach((event, index) => {
        const body = event.body().v0();
        this.events.push({
          type: 'contract',
          id: eventId(header.sequence, applicationOrder, operationIndex, index),
          ledger: header.sequence,
          ledgerClosedAt: closedAt,
          transactionIndex: applicationOrder,
          operationIndex,
          inSuccessfulContractCall: true,
          txHash: tx.hash,
          contractId: StrKey.encodeContract(event.contractId() as unknown as Buffer),
          topic: body.topics().map((t) => t.toXDR('base64')),
          value: body.data().toXDR('base64'),
        });
      }),
    );
    return record;
  }

  /** Keeps the RPC's retention window of ledgers, transactions and events. */
  private prune(): void {
    const excess = this.ledgers.length - LEDGER_RETENTION_WINDOW;
    if (excess <= 0) return;
    this.ledgers.splice(0, excess);
    const oldest = this.oldest.sequence;
    for (const [key, tx] of this.transactions) {
      if (tx.ledger >= oldest) break;
      this.transactions.delete(key);
    }
    const firstKept = this.events.findIndex((e) => e.ledger >= oldest);
    this.events.splice(0, firstKept < 0 ? this.events.length : firstKept);
  }

  /** Applied transactions in ledger and application order. */
  transactionsInOrder(): TransactionRecord[] {
    return [...this.transactions.values()];
  }

  allEvents(): EventRecord[] {
    return this.events;
  }

  ledgerEntry(key: xdr.LedgerKey) {
    return readLedgerEntry(this.store, this.registry, key, this.latest.sequence);
  }

  // ---- conveniences (friendbot, faucet) and reads for the public API --------------------------------------

  /**
   * Signs `build`'s transaction with `signer` and applies it at once in the latest ledger: friendbot and the
   * faucet do not wait for a ledger close.
   */
  private applyNow(
    signer: Keypair,
    addOperations: (builder: TransactionBuilder) => TransactionBuilder,
  ): { hash: string; ok: boolean } {
    const account = getAccount(this.store, signer.publicKey());
    if (!account) throw new Error(`account ${signer.publicKey()} does not exist`);
    const builder = new TransactionBuilder(new Account(signer.publicKey(), account.seqNum.toString()), {
      fee: BASE_FEE.toString(),
      networkPassphrase: this.passphrase,
    }).setTimeout(CONVENIENCE_TX_TIMEOUT);
    const tx = addOperations(builder).build();
    tx.sign(signer);
    const parsed = parseTransaction(tx.toXDR(), this.passphrase);
    const header = this.latest;
    // Conveniences pay the base fee whatever the surge: they are not competing for ledger space.
    const applied = applyTransaction(
      {
        ...this.applyContext(header),
        closeTime: Math.max(header.closeTime, this.now()),
        minInclusionFee: BASE_FEE,
        sorobanMinInclusionFee: BASE_FEE,
      },
      parsed,
    );
    if (applied.status === 'DROPPED') return { hash: parsed.hash, ok: false };
    this.record(parsed, applied, header);
    return { hash: parsed.hash, ok: applied.status === 'SUCCESS' };
  }

  /** Friendbot: creates `address` with `stroops` of XLM; throws when it already exists. */
  friendbot(address: string, stroops: bigint): string {
    if (!StrKey.isValidEd25519PublicKey(address)) throw new Error(`invalid address ${address}`);
    if (getAccount(this.store, address)) throw new Error(`account ${address} already exists`);
    const result = this.applyNow(this.root, (b) =>
      b.addOperation(Operation.createAccount({ destination: address, startingBalance: formatAmount(stroops) })),
    );
    if (!result.ok) throw new Error('friendbot transaction failed');
    return result.hash;
  }

  /**
   * Faucet: creates the account when missing, adds the trustline when missing, then pays `stroops` from the root
   * treasury (a real signed payment, so the answer carries a transaction hash). No issuer secret is involved.
   */
  faucet(address: string, assetCode: string, stroops: bigint, fundXlm: bigint): string {
    const asset = this.registry.require(assetCode);
    if (StrKey.isValidContract(address)) return this.fundContract(address, asset, stroops);
    if (!getAccount(this.store, address)) this.friendbot(address, fundXlm);
    if (!asset.asset.isNative() && !getTrustline(this.store, address, asset.assetId))
      this.addTrustline(address, asset.assetId);
    const result = this.applyNow(this.root, (b) =>
      b.addOperation(Operation.payment({ destination: address, asset: asset.asset, amount: formatAmount(stroops) })),
    );
    if (!result.ok) throw new Error(`faucet payment of ${asset.code} to ${address} failed (trustline limit?)`);
    return result.hash;
  }

  /**
   * Faucet for a contract address (C...): a real SAC transfer from the root treasury, simulated for its footprint
   * and applied at once, so the contract's SAC `Balance` entry holds the amount.
   */
  private fundContract(contractId: string, asset: RegisteredAsset, stroops: bigint): string {
    const rootId = this.root.publicKey();
    const args = [
      new Address(rootId).toScVal(),
      new Address(contractId).toScVal(),
      nativeToScVal(stroops, { type: 'i128' }),
    ];
    const op = Operation.invokeContractFunction({
      contract: asset.contractId,
      function: 'transfer',
      args,
    }) as xdr.Operation<Operation.InvokeHostFunction>;
    const rootAccount = getAccount(this.store, rootId)!;
    const draft = new TransactionBuilder(new Account(rootId, rootAccount.seqNum.toString()), {
      fee: BASE_FEE.toString(),
      networkPassphrase: this.passphrase,
    })
      .addOperation(op)
      .setTimeout(CONVENIENCE_TX_TIMEOUT)
      .build();
    const sim = this.simulate(draft.toXDR());
    if (sim.error || !sim.transactionData)
      throw new Error(`faucet transfer to ${contractId} failed in simulation: ${sim.error ?? 'no data'}`);
    const auth = (sim.results?.[0]?.auth ?? []).map((a) => xdr.SorobanAuthorizationEntry.fromXDR(a, 'base64'));
    const func = (draft.operations[0] as Operation.InvokeHostFunction).func;
    const result = this.applyNow(this.root, (b) =>
      b
        .setSorobanData(new SorobanDataBuilder(sim.transactionData).build())
        .addOperation(Operation.invokeHostFunction({ func, auth })),
    );
    if (!result.ok) throw new Error(`faucet transfer of ${asset.code} to ${contractId} failed`);
    return result.hash;
  }

  /** Deploys the built-in ed25519 account contract for `publicKey` (idempotent); returns its contract id. */
  deployContractAccount(publicKey: string): string {
    return deployAccountContract(this.store, this.networkId, this.root.publicKey(), publicKey, this.latest.sequence);
  }

  private addTrustline(address: string, assetId: string): void {
    const account = getAccount(this.store, address);
    if (!account) throw new Error(`account ${address} does not exist`);
    if (availableNative(account) < BASE_RESERVE)
      throw new Error(`account ${address} lacks the XLM reserve for a trustline`);
    const ledger = this.latest.sequence;
    const flags = newTrustlineFlags(getAccount(this.store, assetId.split(':')[1]));
    this.store.set(entryKey.trustline(address, assetId), {
      kind: 'trustline',
      balance: 0n,
      limit: MAX_INT64,
      flags,
      lastModified: ledger,
    });
    this.store.set(entryKey.account(address), {
      ...account,
      numSubEntries: account.numSubEntries + 1,
      lastModified: ledger,
    });
  }

  /**
   * Freezes (authorized = false) or unfreezes a trustline as its issuer would with setTrustLineFlags. With the
   * issuer's key (a generated issuer) it is a real signed transaction applied at once; for a hosted issuer
   * (Circle's USDC, no key here) the same rule is applied directly to the ledger. Returns the transaction hash,
   * or undefined for the direct change.
   */
  setTrustlineAuthorized(address: string, assetCode: string, authorized: boolean): string | undefined {
    const asset = this.registry.require(assetCode);
    if (asset.asset.isNative()) throw new Error('XLM has no trustlines');
    const issuerKey = this.registry.issuerKeypair(asset.code);
    if (issuerKey) {
      const result = this.applyNow(issuerKey, (b) =>
        b.addOperation(Operation.setTrustLineFlags({ trustor: address, asset: asset.asset, flags: { authorized } })),
      );
      if (!result.ok)
        throw new Error(`setTrustLineFlags on ${address}'s ${asset.code} trustline failed (no trustline?)`);
      return result.hash;
    }
    const error = authorized
      ? changeTrustlineFlags(
          this.store,
          asset.issuer,
          address,
          asset.asset,
          TRUSTLINE_AUTHORIZED,
          MAINTAIN_LIABILITIES,
          this.latest.sequence,
        )
      : changeTrustlineFlags(
          this.store,
          asset.issuer,
          address,
          asset.asset,
          0,
          TRUSTLINE_AUTHORIZED | MAINTAIN_LIABILITIES,
          this.latest.sequence,
        );
    if (typeof error === 'string') throw new Error(`cannot change ${address}'s ${asset.code} trustline: ${error}`);
    return undefined;
  }

  /** Balance in stroops; the issuer's own asset reports 0 (it has no trustline). */
  balance(address: string, assetCode: string): bigint {
    return balanceOf(this.store, address, this.registry.require(assetCode)) ?? 0n;
  }

  hasTrustline(address: string, assetCode: string): boolean {
    const asset = this.registry.require(assetCode);
    if (asset.asset.isNative()) return getAccount(this.store, address) !== undefined;
    return getTrustline(this.store, address, asset.assetId) !== undefined;
  }
}
