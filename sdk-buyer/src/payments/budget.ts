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
 * With a `store` the commitments survive a restart (FileBudgetStore ships; any BudgetStore works). A store with
 * `update` (FileBudgetStore has it) is SHARED: several processes may use one store at once and together never
 * commit more than `total`, because every change is a read-check-write under the store's lock (check-and-reserve
 * is one atomic step across processes). A store without `update` belongs to one process at a time.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { lock } from 'proper-lockfile';
import { fromStroops, toStroops } from '../core/amounts.js';
import { consumedNonce, transferOnLedger } from './ledger-reads.js';
import type { LedgerReader } from '../core/soroban-rpc.js';

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
 *
 * `update`, when present, makes the store shareable between processes: it must hold an exclusive lock (across
 * processes) while it reads the current list, calls `change` with it, and saves what `change` returns; when
 * `change` throws, nothing is saved and the error is passed on. The budget then uses `update` for every change
 * and never trusts a list it read earlier.
 */
export interface BudgetStore {
  load(): Commitment[] | Promise<Commitment[]>;
  save(commitments: Commitment[]): void | Promise<void>;
  update?(change: (current: Commitment[]) => Commitment[] | Promise<Commitment[]>): Promise<Commitment[]>;
}

export interface FileBudgetStoreOptions {
  /**
   * A lock not refreshed for this long is stale: its holder died (killed, crashed, machine lost) and the lock is
   * taken over. A live holder refreshes it every `staleMs / 2`. Default 10 000 ms (the library's minimum is 2 000).
   */
  staleMs?: number;
  /** Most time to wait for the lock before the payment fails (it never signs without it). Default 60 000 ms. */
  waitMs?: number;
}

/**
 * A JSON file (written to a temporary file, then renamed over the old one), shareable between processes: every
 * change holds a lock on the file (`<file>.lock`, proper-lockfile: an atomic mkdir, refreshed while held, taken
 * over when stale) while it re-reads the file, checks and writes. A holder that dies leaves a lock that is stale
 * after `staleMs` and is then taken over, so a crash never blocks the other processes for longer than that.
 */
export class FileBudgetStore implements BudgetStore {
  readonly staleMs: number;
  readonly waitMs: number;
  constructor(
    readonly file: string,
    options: FileBudgetStoreOptions = {},
  ) {
    this.staleMs = Math.max(2000, options.staleMs ?? 10_000);
    this.waitMs = options.waitMs ?? 60_000;
  }
  load(): Commitment[] {
    try {
      const doc = JSON.parse(fs.readFileSync(this.file, 'utf8')) as { commitments?: Commitment[] };
      return Array.isArray(doc.commitments) ? doc.commitments : [];
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new Error(`The budget store ${this.file} cannot be read: ${(err as Error).message}`, { cause: err });
    }
  }
  save(commitments: Commitment[]): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ version: 1, commitments }, null, 1), { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
  /** Read, change and write under the file's lock (see the class). */
  async update(change: (current: Commitment[]) => Commitment[] | Promise<Commitment[]>): Promise<Commitment[]> {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    let compromised: Error | null = null;
    const release = await this.acquire((err) => (compromised = err));
    try {
      const next = await change(this.load());
      // The lock was taken over (this process stalled past staleMs): another process may have written since we read.
      if (compromised)
        throw new Error(
          `The lock on the budget store ${this.file} was lost (${(compromised as Error).message}); nothing was written`,
        );
      this.save(next);
      return next;
    } finally {
      await release().catch(() => undefined);
    }
  }

  private async acquire(onCompromised: (err: Error) => void): Promise<() => Promise<void>> {
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      try {
        return await lock(this.file, {
          realpath: false,
          stale: this.staleMs,
          update: Math.floor(this.staleMs / 2),
          onCompromised,
          retries: { retries: 20, factor: 1.3, minTimeout: 5, maxTimeout: 200, randomize: true },
        });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ELOCKED' || Date.now() >= deadline) {
          throw new Error(`The budget store ${this.file} could not be locked: ${(err as Error).message}`, {
            cause: err,
          });
        }
      }
    }
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
  if (typeof value !== 'string')
    throw new TypeError(`${field} must be a decimal string such as "0.05" (got a ${typeof value})`);
  try {
    return toStroops(value);
  } catch {
    throw new TypeError(
      `${field} must be a decimal amount with at most 7 fraction digits, such as "0.05" (got "${value.slice(0, 32)}")`,
    );
  }
}

const sum = (list: Commitment[]) => list.reduce((a, c) => a + BigInt(c.stroops), 0n);

/**
 * A `reserved` commitment older than this, in a shared store, was never signed: its process died or stalled between
 * reserving and signing. It is dropped; a process that still signs it reserves again (with the total checked) before
 * its signature may leave.
 */
export const RESERVATION_TTL_MS = 60_000;

function open(list: Commitment[], key: BudgetKey): Commitment[] {
  return list.filter(
    (c) =>
      c.network === key.network &&
      c.asset === key.asset &&
      (c.state === 'reserved' || c.state === 'committed' || c.state === 'spent'),
  );
}

function withoutStaleReservations(list: Commitment[], now = Date.now()): Commitment[] {
  return list.filter((c) => c.state !== 'reserved' || now - Date.parse(c.createdAt) < RESERVATION_TTL_MS);
}

export class Budget {
  private readonly perCall: bigint | null;
  private readonly total: bigint | null;
  private readonly store: BudgetStore | null;
  private commitments: Commitment[] = [];
  private loaded: Promise<void> | null = null;
  /** Changes of this process, in order (a shared store's lock then orders them against other processes). */
  private queue: Promise<unknown> = Promise.resolve();
  /** Set by the client: reads the ledger of a network (for reconcile). */
  ledger: LedgerReader | null = null;

  constructor(options: BudgetOptions = {}) {
    this.perCall = options.perCall !== undefined ? budgetAmount('budget.perCall', options.perCall) : null;
    this.total = options.total !== undefined ? budgetAmount('budget.total', options.total) : null;
    this.store = options.store ?? null;
  }

  /** Whether the store is shared between processes (it has `update`): then every change re-reads it under its lock. */
  private get shared(): boolean {
    return typeof this.store?.update === 'function';
  }

  /** Loads the store (once). The getters read what is loaded: await this after a restart before reading them. */
  load(): Promise<void> {
    return (this.loaded ??= (async () => {
      if (!this.store) return;
      const stored = await this.store.load();
      // A `reserved` commitment left by a previous process was never signed and sent (the signature leaves only
      // after it is recorded as committed): it is dropped. In a shared store another live process may be signing
      // it right now: only stale reservations are dropped there.
      this.commitments = this.shared ? withoutStaleReservations(stored) : stored.filter((c) => c.state !== 'reserved');
    })());
  }

  /** The current list: re-read from a shared store (other processes change it), else what this process holds. */
  private async current(): Promise<Commitment[]> {
    await this.load();
    if (this.shared) this.commitments = withoutStaleReservations(await this.store!.load());
    return this.commitments;
  }

  /**
   * Applies `change` to the list atomically: for a shared store, under its lock on a fresh read (so a check made in
   * `change` holds across processes), else on this process's list, then saved. When `change` throws nothing is saved.
   * A store that fails to save makes the payment fail before its signature leaves the process.
   */
  private mutate<T>(change: (list: Commitment[]) => T): Promise<T> {
    const run = async (): Promise<T> => {
      await this.load();
      if (this.shared) {
        let result: T | undefined;
        this.commitments = await this.store!.update!((stored) => {
          const list = withoutStaleReservations(stored);
          result = change(list);
          return list;
        });
        return result as T;
      }
      const result = change(this.commitments);
      await this.store?.save(this.commitments.map((c) => ({ ...c })));
      return result;
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Throws BudgetExceededError when `stroops` more of `key` would pass the total. */
  private assertRoom(list: Commitment[], key: BudgetKey, stroops: bigint): void {
    if (this.total === null) return;
    const used = sum(open(list, key));
    if (used + stroops <= this.total) return;
    const left = this.total - used;
    throw new BudgetExceededError(
      `Payment of ${fromStroops(stroops)} exceeds the remaining budget of ${fromStroops(left < 0n ? 0n : left)} ` +
        `(signed authorizations count until they are settled or expire unused)`,
      fromStroops(stroops),
      fromStroops(left < 0n ? 0n : left),
      'total',
    );
  }

  /**
   * Reserves `stroops` of `key` before signing, or throws BudgetExceededError. When the total would be exceeded it
   * first asks the ledger about earlier commitments (reconcile) and counts again. The final check and the
   * reservation are one step (under the shared store's lock).
   */
  async reserve(
    key: BudgetKey & { payTo: string; payer: string },
    stroops: bigint,
    perCallOverride?: string,
  ): Promise<Commitment> {
    await this.load();
    const perCall = perCallOverride !== undefined ? budgetAmount('maxAmount', perCallOverride) : this.perCall;
    if (perCall !== null && stroops > perCall)
      throw new BudgetExceededError(
        `Payment of ${fromStroops(stroops)} exceeds the per-call budget of ${fromStroops(perCall)}`,
        fromStroops(stroops),
        fromStroops(perCall),
        'perCall',
      );
    if (this.total !== null && sum(open(await this.current(), key)) + stroops > this.total)
      await this.reconcile(key).catch(() => undefined);
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
    await this.mutate((list) => {
      this.assertRoom(list, key, stroops);
      list.push({ ...c });
    });
    return c;
  }

  /** Nothing was signed (signing failed): the reservation goes away. */
  async abandon(c: Commitment): Promise<void> {
    if (c.state !== 'reserved') return;
    await this.mutate((list) => {
      const i = list.findIndex((x) => x.id === c.id && x.state === 'reserved');
      if (i >= 0) list.splice(i, 1);
    });
  }

  /**
   * The authorization exists: it counts until proven spent or unusable. Called BEFORE the signature leaves the
   * process; if its reservation was dropped meanwhile (stale, see RESERVATION_TTL_MS) it is reserved again with the
   * total checked, and BudgetExceededError means the signature must not be sent.
   */
  async signed(
    c: Commitment,
    signature: { nonce: string; signedAtLedger: number; expiresAtLedger: number },
  ): Promise<void> {
    await this.mutate((list) => {
      let x = list.find((y) => y.id === c.id);
      if (!x) {
        this.assertRoom(list, c, BigInt(c.stroops));
        x = { ...c };
        list.push(x);
      }
      Object.assign(x, signature, { state: 'committed' });
    });
    Object.assign(c, signature, { state: 'committed' });
  }

  /** A settlement came back for it. */
  async settled(c: Commitment, transactionHash: string | null): Promise<void> {
    await this.mutate((list) => {
      const x = list.find((y) => y.id === c.id);
      if (x) Object.assign(x, { state: 'spent', transactionHash });
      else list.push({ ...c, state: 'spent', transactionHash });
    });
    Object.assign(c, { state: 'spent', transactionHash });
  }

  /**
   * Asks the ledger about every open commitment (of `key`, or all): nonce consumed -> spent; expiry passed and no
   * transfer found -> released. Commitments the ledger cannot answer for stay committed. Returns how many moved.
   * The ledger is asked outside the store's lock; what it answered is then applied to commitments still committed.
   */
  async reconcile(key?: BudgetKey): Promise<{ spent: number; released: number }> {
    const ledger = this.ledger;
    if (!ledger) {
      await this.load();
      return { spent: 0, released: 0 };
    }
    const snapshot = (await this.current()).map((c) => ({ ...c }));
    const claimed = new Set(snapshot.map((c) => c.transactionHash).filter((h): h is string => !!h));
    const decided = new Map<string, { state: 'spent' | 'released'; transactionHash?: string }>();
    for (const c of snapshot) {
      if (c.state !== 'committed' || !c.nonce || c.expiresAtLedger === null) continue;
      if (key && (c.network !== key.network || c.asset !== key.asset)) continue;
      try {
        const latest = await ledger.latestLedger(c.network);
        if (latest <= c.expiresAtLedger) {
          if (await consumedNonce(ledger, c)) decided.set(c.id, { state: 'spent' });
          continue;
        }
        const tx = await transferOnLedger(ledger, c, claimed);
        if (tx) {
          claimed.add(tx);
          decided.set(c.id, { state: 'spent', transactionHash: tx });
        } else decided.set(c.id, { state: 'released' });
      } catch {
        // The ledger did not answer: the commitment keeps counting.
      }
    }
    if (!decided.size) return { spent: 0, released: 0 };
    return this.mutate((list) => {
      const moved = { spent: 0, released: 0 };
      const taken = new Set(list.map((c) => c.transactionHash).filter((h): h is string => !!h));
      for (const c of list) {
        const d = decided.get(c.id);
        if (!d || c.state !== 'committed') continue;
        if (d.transactionHash) {
          if (taken.has(d.transactionHash)) continue; // another process matched that transfer to another commitment
          taken.add(d.transactionHash);
        }
        Object.assign(c, d);
        moved[d.state]++;
      }
      return moved;
    });
  }

  /** Totals per asset and network (decimal units). */
  async totals(): Promise<BudgetTotals[]> {
    await this.current();
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

  /** The configured limits, decimal (null: none): what the marketplace MCP server's get_budget shows. */
  get limits(): { perCall: string | null; total: string | null } {
    return {
      perCall: this.perCall === null ? null : fromStroops(this.perCall),
      total: this.total === null ? null : fromStroops(this.total),
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
