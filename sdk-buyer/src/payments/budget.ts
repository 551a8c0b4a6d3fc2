/**
 * Budgets as commitments. A signed authorization is money the seller can take at any time until it expires, so
 * it counts against the budget from the moment it is signed (`committed`) until it is proven one way or the other:
 *
 * - `spent`: the seller answered a settlement (transaction hash), or the ledger shows the authorization's nonce
 *   consumed, or a transfer payer -> payTo of that amount in that asset landed before the expiry ledger;
 * - `released`: the expiry ledger has passed and the ledger shows no such transfer (the authorization can never
 *   be used any more).
 *
 * Nothing else releases a commitment: not an error answer, not a 402, not a dropped connection, not the
 * facilitator saying the settlement failed (the ledger has the last word). Limits apply per asset contract and
 * network. What a buyer can lose at most is therefore `total` per asset: every signature is counted until the
 * ledger proves it can no longer be used.
 *
 * With a `store` the commitments survive a restart (FileBudgetStore ships; any BudgetStore works). One store
 * belongs to one process at a time.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fromStroops, toStroops } from '../core/amounts.js';
import { consumedNonce, transferOnLedger, type LedgerReader } from './ledger-reads.js';

/** Thrown before anything is signed when a payment would exceed the per-call or the client's cumulative budget. */
export class BudgetExceededError extends Error {
  override readonly name = 'BudgetExceededError';
  readonly code = 'BUDGET_EXCEEDED';
  constructor(
    message: string,
    /** Decimal amount the resource asks. */
    readonly requested: string,
    /** Decimal amount that was still allowed (per call or cumulative, whichever refused). */
    readonly remaining: string,
    readonly limit: 'perCall' | 'total',
  ) {
    super(message);
  }
}

/** One signed (or about to be signed) authorization, as the store keeps it. Amounts are stroops (strings). */
export interface Commitment {
  id: string;
  network: string;
  /** The asset's contract id (C...): what the authorization transfers. */
  asset: string;
  payTo: string;
  payer: string;
  stroops: string;
  /** `reserved`: being signed; `committed`: signed, may still be spent; `spent`; `released`: proven unusable. */
  state: 'reserved' | 'committed' | 'spent' | 'released';
  nonce: string | null;
  /** The latest ledger when it was signed (where the ledger search for its transfer starts). */
  signedAtLedger: number | null;
  expiresAtLedger: number | null;
  transactionHash: string | null;
  createdAt: string;
}

/**
 * Where a budget keeps its commitments. `load` is called once, before the first payment; `save` after every
 * change with the full list (write it atomically). Both may be sync or async.
 */
export interface BudgetStore {
  load(): Commitment[] | Promise<Commitment[]>;
  save(commitments: Commitment[]): void | Promise<void>;
}

/** A JSON file (written to a temporary file, then renamed over the old one). */
export class FileBudgetStore implements BudgetStore {
  constructor(readonly file: string) {}
  load(): Commitment[] {
    try {
      const doc = JSON.parse(fs.readFileSync(this.file, 'utf8')) as { commitments?: Commitment[] };
      return Array.isArray(doc.commitments) ? doc.commitments : [];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new Error(`The budget store ${this.file} cannot be read: ${(err as Error).message}`);
    }
  }
  save(commitments: Commitment[]): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ version: 1, commitments }, null, 1), { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}

export interface BudgetOptions {
  /** Most one call may pay, decimal units of the asset (e.g. "0.05"). */
  perCall?: string;
  /** Most this client may commit in total, per asset and network, decimal units (e.g. "1"). */
  total?: string;
  /** Keeps the commitments across restarts (see FileBudgetStore). Default: in memory. */
  store?: BudgetStore;
}

export interface BudgetKey {
  network: string;
  asset: string;
}

export interface BudgetTotals extends BudgetKey {
  committed: string;
  spent: string;
  released: string;
}

/** Parses a decimal budget field, with a message naming the field (never at payment time). */
export function budgetAmount(field: string, value: unknown): bigint {
  if (typeof value !== 'string') throw new TypeError(`${field} must be a decimal string such as "0.05" (got a ${typeof value})`);
  try {
    return toStroops(value);
  } catch {
    throw new TypeError(`${field} must be a decimal amount with at most 7 fraction digits, such as "0.05" (got "${value.slice(0, 32)}")`);
  }
}

const sum = (list: Commitment[]) => list.reduce((a, c) => a + BigInt(c.stroops), 0n);

export class Budget {
  private readonly perCall: bigint | null;
  private readonly total: bigint | null;
  private readonly store: BudgetStore | null;
  private commitments: Commitment[] = [];
  private loaded: Promise<void> | null = null;
  private saving: Promise<void> = Promise.resolve();
  /** Set by the client: reads the ledger of a network (for reconcile). */
  ledger: LedgerReader | null = null;

  constructor(options: BudgetOptions = {}) {
    this.perCall = options.perCall !== undefined ? budgetAmount('budget.perCall', options.perCall) : null;
    this.total = options.total !== undefined ? budgetAmount('budget.total', options.total) : null;
    this.store = options.store ?? null;
  }

  /** Loads the store (once). The getters read what is loaded: await this after a restart before reading them. */
  load(): Promise<void> {
    return (this.loaded ??= (async () => {
      // A `reserved` commitment left by a previous process was never signed and sent (the signature leaves only
      // after it is recorded as committed): it is dropped.
      if (this.store) this.commitments = (await this.store.load()).filter((c) => c.state !== 'reserved');
    })());
  }

  /** Saves the list; a store that fails makes the payment fail before its signature leaves the process. */
  private persist(): Promise<void> {
    const snapshot = this.commitments.map((c) => ({ ...c }));
    const saved = this.saving.then(() => this.store?.save(snapshot));
    this.saving = saved.catch(() => undefined);
    return saved;
  }

  private open(key: BudgetKey): Commitment[] {
    return this.commitments.filter((c) => c.network === key.network && c.asset === key.asset && (c.state === 'reserved' || c.state === 'committed' || c.state === 'spent'));
  }

  /**
   * Reserves `stroops` of `key` before signing, or throws BudgetExceededError. When the total would be exceeded it
   * first asks the ledger about earlier commitments (reconcile) and counts again.
   */
  async reserve(key: BudgetKey & { payTo: string; payer: string }, stroops: bigint, perCallOverride?: string): Promise<Commitment> {
    await this.load();
    const perCall = perCallOverride !== undefined ? budgetAmount('maxAmount', perCallOverride) : this.perCall;
    if (perCall !== null && stroops > perCall)
      throw new BudgetExceededError(`Payment of ${fromStroops(stroops)} exceeds the per-call budget of ${fromStroops(perCall)}`, fromStroops(stroops), fromStroops(perCall), 'perCall');
    if (this.total !== null && sum(this.open(key)) + stroops > this.total) await this.reconcile(key).catch(() => undefined);
    const used = sum(this.open(key));
    if (this.total !== null && used + stroops > this.total) {
      const left = this.total - used;
      throw new BudgetExceededError(
        `Payment of ${fromStroops(stroops)} exceeds the remaining budget of ${fromStroops(left)} (signed authorizations count until they are settled or expire unused)`,
        fromStroops(stroops),
        fromStroops(left),
        'total',
      );
    }
    const c: Commitment = {
      id: crypto.randomUUID(),
      network: key.network,
      asset: key.asset,
      payTo: key.payTo,
      payer: key.payer,
      stroops: stroops.toString(),
      state: 'reserved',
      nonce: null,
      signedAtLedger: null,
      expiresAtLedger: null,
      transactionHash: null,
      createdAt: new Date().toISOString(),
    };
    this.commitments.push(c);
    await this.persist();
    return c;
  }

  /** Nothing was signed (signing failed): the reservation goes away. */
  async abandon(c: Commitment): Promise<void> {
    if (c.state !== 'reserved') return;
    this.commitments = this.commitments.filter((x) => x.id !== c.id);
    await this.persist();
  }

  /** The authorization exists: it counts until proven spent or unusable. */
  async signed(c: Commitment, signature: { nonce: string; signedAtLedger: number; expiresAtLedger: number }): Promise<void> {
    Object.assign(c, signature, { state: 'committed' });
    await this.persist();
  }

  /** A settlement came back for it. */
  async settled(c: Commitment, transactionHash: string | null): Promise<void> {
    Object.assign(c, { state: 'spent', transactionHash });
    await this.persist();
  }

  /**
   * Asks the ledger about every open commitment (of `key`, or all): nonce consumed -> spent; expiry passed and no
   * transfer found -> released. Commitments the ledger cannot answer for stay committed. Returns how many moved.
   */
  async reconcile(key?: BudgetKey): Promise<{ spent: number; released: number }> {
    await this.load();
    const moved = { spent: 0, released: 0 };
    const ledger = this.ledger;
    if (!ledger) return moved;
    const claimed = new Set(this.commitments.map((c) => c.transactionHash).filter((h): h is string => !!h));
    for (const c of this.commitments) {
      if (c.state !== 'committed' || !c.nonce || c.expiresAtLedger === null) continue;
      if (key && (c.network !== key.network || c.asset !== key.asset)) continue;
      try {
        const latest = await ledger.latestLedger(c.network);
        if (latest <= c.expiresAtLedger) {
          if (await consumedNonce(ledger, c)) {
            Object.assign(c, { state: 'spent' });
            moved.spent++;
          }
          continue;
        }
        const tx = await transferOnLedger(ledger, c, claimed);
        if (tx) {
          claimed.add(tx);
          Object.assign(c, { state: 'spent', transactionHash: tx });
          moved.spent++;
        } else {
          Object.assign(c, { state: 'released' });
          moved.released++;
        }
      } catch {
        // The ledger did not answer: the commitment keeps counting.
      }
    }
    if (moved.spent || moved.released) await this.persist();
    return moved;
  }

  /** Totals per asset and network (decimal units). */
  async totals(): Promise<BudgetTotals[]> {
    await this.load();
    const keys = new Map<string, BudgetKey>();
    for (const c of this.commitments) keys.set(`${c.network} ${c.asset}`, { network: c.network, asset: c.asset });
    return [...keys.values()].map((k) => {
      const of = this.commitments.filter((c) => c.network === k.network && c.asset === k.asset);
      return { ...k, ...this.amounts(of) };
    });
  }

  private amounts(list: Commitment[]): Omit<BudgetTotals, keyof BudgetKey> {
    return {
      committed: fromStroops(sum(list.filter((c) => c.state === 'reserved' || c.state === 'committed'))),
      spent: fromStroops(sum(list.filter((c) => c.state === 'spent'))),
      released: fromStroops(sum(list.filter((c) => c.state === 'released'))),
    };
  }

  /** Signed and not yet proven spent or unusable (all assets; use totals() per asset). */
  get committed(): string {
    return this.amounts(this.commitments).committed;
  }
  /** Settled (all assets). */
  get spent(): string {
    return this.amounts(this.commitments).spent;
  }
  /** Proven unusable: expired with no transfer on the ledger (all assets). */
  get released(): string {
    return this.amounts(this.commitments).released;
  }
  /** committed + spent: what counts against the limits. */
  get spentAmount(): string {
    const a = this.amounts(this.commitments);
    return fromStroops(toStroops(a.committed) + toStroops(a.spent));
  }
  /** A copy of every commitment (for inspection). */
  list(): Commitment[] {
    return this.commitments.map((c) => ({ ...c }));
  }
}
