import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { DomainError } from '../domain/errors';
import type {
  AcquireOptions,
  ChannelLease,
  ChannelLeaseRepository,
  ChannelLeaser,
  LeaseClaim,
  LeaseTake,
  PartyKind,
  SettleParty,
} from '../domain/facilitator/types';
import { FairQueue, PARTY_KINDS, partyKey, type QueuePlaces } from './fair-queue';
import type { FacilitatorMetrics } from '../metrics/facilitator';
import { localNetworkClient } from './local-network-client';
import type { NetworkRegistry } from '../domain/network-registry';
import { sorobanRpc } from './soroban-rpc';

/**
 * Channel accounts: the facilitator's own source accounts that pay the fees of settlement transactions. Stellar
 * admits one transaction per source account per ledger, so throughput comes from a pool, up to the network's own
 * ceiling: Soroban transaction bytes per ledger (~266 KB, ~219 exact settles per ledger for the whole network).
 *
 * One pool for every server process: channels are leased through the database (table `channel_leases`, migration
 * 0005; the party a lease is for, migration 0075). A lease is a row taken under the network's row locks (each
 * seller, payer and client at most its cap of busy channels: fair capacity, issue #29), stamped with this lease's token
 * and a short expiry
 * (`leaseSeconds`, default 15 s), renewed by a heartbeat (every third of it) for as long as the holder keeps it: a
 * process that dies without releasing its leases frees its unpinned channels within `leaseSeconds`. Once the settlement
 * transaction is built its hash is pinned on
 * the lease in the same database transaction as the pending settlement; from then on the channel is not handed out
 * again, whatever the expiry, until the ledger's answer is recorded (by the request or by the confirmation worker),
 * so no channel ever carries two in-flight transactions (no txBadSeq) and a transaction whose fate is unknown never
 * has a successor built on a guessed sequence number. Sequence numbers are fetched fresh for every transaction.
 *
 * Every process must know the same keypairs: on real networks the configured secrets
 * (STELLAR_TESTNET_CHANNEL_SECRETS / STELLAR_PUBNET_CHANNEL_SECRETS, the same list for every process); on the local
 * network they are derived from one seed (HMAC-SHA256(seed, network/index)), kept in the data folder
 * (`channel-seed`, created 0600 on first start) unless given. Secrets and the seed are never logged or returned.
 */
export interface LeasedChannel extends ChannelLease {
  keypair: Keypair;
}

interface Waiter {
  party: SettleParty | null;
  /** The payment attempt it settles: duplicates of one payment share one waiting place. */
  key: string | null;
  /** Set by the dispatcher: the channel this waiter was given, or the error its take met. */
  lease: LeasedChannel | null;
  error: unknown;
  /** The waiter left (timed out, or its `whileWaiting` threw): a channel taken for it is given back. */
  gone: boolean;
  /** Ends the waiter's current pause. */
  notify(): void;
}

/** One network's waiting settles in this process and their dispatcher. */
interface NetworkQueue {
  fair: FairQueue<Waiter>;
  /** The dispatcher is asking the lease table. */
  running: boolean;
  /** A channel was released while it ran: it runs again at once. */
  again: boolean;
  timer: NodeJS.Timeout | null;
  /** Current pause between two asks while every channel is busy (doubles up to `pollMs`). */
  backoff: number;
}

/** How often a settle waiting for a channel runs its `whileWaiting` check. */
const WAITER_CHECK_MS = 200;
const FIRST_BACKOFF_MS = 10;

export interface ChannelPoolOptions {
  /** Expiry of a lease without a pinned transaction (renewed every third of it while held). Default 15 s. */
  leaseSeconds?: number;
  /** How long acquire waits for a free channel before SERVICE_UNAVAILABLE. Default 30 s. */
  acquireTimeoutMs?: number;
  /** Wait between two tries while every channel is busy. Default 50 ms. */
  pollMs?: number;
  /**
   * Channels of a network one seller, one payer, one client may hold at once, across every process (counted in the
   * lease table). null or absent: half the network's pool, at least 1.
   */
  channelsPerSeller?: number | null;
  channelsPerPayer?: number | null;
  channelsPerClient?: number | null;
  /** Settles of one seller, payer, client that may wait for a channel of a network in this process. Default 4 each. */
  queuePerSeller?: number;
  queuePerPayer?: number;
  queuePerClient?: number;
  /** Settles that may wait for a channel of a network in this process, in all. Default 64. */
  queueTotal?: number;
}

/** Defaults of the fair-capacity bounds (documented in server/README.md, Configuration). */
export const FAIR_CAPACITY_DEFAULTS = { queuePerParty: 4, queueTotal: 64 } as const;

export class ChannelAccountPool implements ChannelLeaser {
  private readonly keys = new Map<string, Map<string, Keypair>>();
  private readonly held = new Map<string, number>();
  /** Settles of this process waiting for a channel, per network, served in fair order (fair-queue.ts). */
  private readonly waiting = new Map<string, NetworkQueue>();
  private readonly leaseSeconds: number;
  private readonly acquireTimeoutMs: number;
  private readonly pollMs: number;
  private readonly places: QueuePlaces;

  constructor(
    private readonly leases: ChannelLeaseRepository,
    private readonly metrics?: FacilitatorMetrics,
    private readonly opts: ChannelPoolOptions = {},
  ) {
    this.leaseSeconds = opts.leaseSeconds ?? 15;
    this.acquireTimeoutMs = opts.acquireTimeoutMs ?? 30_000;
    this.pollMs = opts.pollMs ?? 50;
    const perParty = FAIR_CAPACITY_DEFAULTS.queuePerParty;
    this.places = {
      total: opts.queueTotal ?? FAIR_CAPACITY_DEFAULTS.queueTotal,
      seller: opts.queuePerSeller ?? perParty,
      payer: opts.queuePerPayer ?? perParty,
      client: opts.queuePerClient ?? perParty,
    };
  }

  async add(network: string, keypairs: Keypair[]): Promise<void> {
    const known = this.keys.get(network) ?? new Map<string, Keypair>();
    for (const k of keypairs) known.set(k.publicKey(), k);
    this.keys.set(network, known);
    await this.leases.register(
      network,
      keypairs.map((k) => k.publicKey()),
    );
    this.metrics?.channelsTotal.set({ network }, known.size);
  }

  size(network: string): number {
    return this.keys.get(network)?.size ?? 0;
  }

  addresses(network: string): string[] {
    return [...(this.keys.get(network)?.keys() ?? [])];
  }

  /** The channels of a network one party may hold at once: as configured, else half the pool (at least 1). */
  caps(network: string): Record<PartyKind, number> {
    const half = Math.max(1, Math.floor(this.size(network) / 2));
    // A payer holds one channel by default: its lease stays pinned until the transfer's final answer, so a payer has
    // one
    // transfer in flight (issue #29: a payer's failure is the payer's) and waits in the fair queue for the next.
    return {
      seller: this.opts.channelsPerSeller ?? half,
      payer: this.opts.channelsPerPayer ?? 1,
      client: this.opts.channelsPerClient ?? half,
    };
  }

  /**
   * Takes a free channel for `opts.party`. With nobody waiting in this process it asks the lease table at once (a
   * burst's arrivals all ask concurrently; as many as channels are free, and their parties' caps allow, win). Else,
   * or when none could be taken, the settle waits in this process's fair queue, if a place is left for it: beyond
   * the places of its seller, payer or client, or the total, it is refused at once with SERVICE_UNAVAILABLE, the
   * bound named in the details, and Retry-After. One dispatcher per network serves the queue (FairQueue's order),
   * asking the lease table again at each channel released in this process and otherwise every `pollMs` at most
   * (backing off from 10 ms): a party at its cap of channels is skipped, never blocking those behind it. A waiting
   * settle runs `opts.whileWaiting` every WAITER_CHECK_MS (it may throw to stop waiting: the settle whose attempt
   * was claimed by another) and gives up after `acquireTimeoutMs` with SERVICE_UNAVAILABLE and Retry-After. The
   * queue only orders this process's own tries: the lease and the caps are always decided by the database.
   */
  async acquire(network: string, opts: AcquireOptions = {}): Promise<LeasedChannel> {
    const known = this.keys.get(network);
    if (!known || known.size === 0)
      throw new DomainError('SERVICE_UNAVAILABLE', `No channel accounts are configured for ${network}`);
    const party = opts.party ?? null;
    const q = this.queueOf(network);
    if (q.fair.size === 0) {
      const token = crypto.randomUUID();
      const took = await this.leases.takeFor(
        network,
        [...known.keys()],
        token,
        this.leaseSeconds,
        this.claim(network, party),
      );
      if (took.address !== null) return this.leased(network, known, took.address, token, party);
    }
    const refused = q.fair.refusal(party, this.places, opts.attemptId ?? null);
    if (refused) throw this.queueFull(network, refused.bound, refused.limit);
    const me: Waiter = {
      party,
      key: opts.attemptId ?? null,
      lease: null,
      error: null,
      gone: false,
      notify: () => undefined,
    };
    q.fair.push(me);
    this.dispatch(network);
    const deadline = Date.now() + this.acquireTimeoutMs;
    try {
      for (;;) {
        if (me.lease) return me.lease;
        if (me.error) throw me.error;
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new DomainError(
            'SERVICE_UNAVAILABLE',
            `Every channel account of ${network} is busy; the payment was not used: retry the same settle shortly`,
            [],
            {
              'Retry-After': this.retryAfter(),
            },
          );
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(WAITER_CHECK_MS, left));
          me.notify = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        me.notify = () => undefined;
        if (me.lease || me.error) continue;
        if (opts.whileWaiting) await opts.whileWaiting();
      }
    } catch (err) {
      me.gone = true;
      q.fair.remove(me);
      // Given a channel while `whileWaiting` ran and threw: it goes back (and to the next in line).
      if (me.lease) await me.lease.release().catch(() => undefined);
      throw err;
    }
  }

  private claim(network: string, party: SettleParty | null): LeaseClaim | null {
    return party ? { party, caps: this.caps(network) } : null;
  }

  private retryAfter(): string {
    return String(Math.max(1, Math.ceil(this.leaseSeconds / 3)));
  }

  private queueFull(network: string, bound: 'total' | PartyKind, limit: number): DomainError {
    const who = bound === 'total' ? 'settles in all' : `settles of one ${bound}`;
    return new DomainError(
      'SERVICE_UNAVAILABLE',
      `Every channel account of ${network} this settle may use is busy and its waiting places are taken (at ` +
        `most ${limit} ${who} wait); the payment was not used: retry the same settle after Retry-After`,
      [
        {
          code: bound === 'total' ? 'settle_queue_total' : `settle_queue_per_${bound}`,
          message: `at most ${limit} ${who} may wait for a channel of ${network} in one service process`,
        },
      ],
      { 'Retry-After': this.retryAfter() },
    );
  }

  /** Runs the network's dispatcher now (or again right after its current run). */
  private dispatch(network: string): void {
    const q = this.queueOf(network);
    if (q.running) {
      q.again = true;
      return;
    }
    if (q.timer) clearTimeout(q.timer);
    q.timer = null;
    if (q.fair.size === 0) return;
    q.running = true;
    q.again = false;
    void this.serve(network, q).finally(() => {
      q.running = false;
      if (q.fair.size === 0) return;
      if (q.again) return this.dispatch(network);
      // Nothing could be given now: ask again after a pause (channels freed by other processes, or by the
      // confirmation of a pinned transaction, wake nobody here).
      const pause = q.backoff * (0.5 + Math.random());
      q.backoff = Math.min(q.backoff * 2, this.pollMs);
      q.timer = setTimeout(() => {
        q.timer = null;
        this.dispatch(network);
      }, pause);
      q.timer.unref();
    });
  }

  /** Gives channels to waiters in fair order until none is free or every waiter left is at its parties' caps. */
  private async serve(network: string, q: NetworkQueue): Promise<void> {
    const known = this.keys.get(network) as Map<string, Keypair>;
    const addresses = [...known.keys()];
    const caps = this.caps(network);
    const capped = new Set<string>();
    const skip = (w: Waiter) =>
      w.party !== null &&
      PARTY_KINDS.some((k) => capped.has(partyKey(k, w.party!)) || q.fair.held(k, w.party!) >= caps[k]);
    for (;;) {
      const w = q.fair.next(skip);
      if (!w) return;
      const token = crypto.randomUUID();
      let took: LeaseTake;
      try {
        took = await this.leases.takeFor(network, addresses, token, this.leaseSeconds, this.claim(network, w.party));
      } catch (err) {
        // The database failed this ask: the waiter it was for answers with that error (as its own ask would).
        if (q.fair.remove(w)) {
          w.error = err;
          w.notify();
        }
        continue;
      }
      if (took.address !== null) {
        q.backoff = FIRST_BACKOFF_MS;
        const lease = this.leased(network, known, took.address, token, w.party);
        if (w.gone || !q.fair.remove(w)) {
          void lease.release().catch(() => undefined);
          continue;
        }
        w.lease = lease;
        w.notify();
        continue;
      }
      if (took.full === 'pool') return;
      capped.add(partyKey(took.full, w.party as SettleParty));
    }
  }

  private queueOf(network: string): NetworkQueue {
    let q = this.waiting.get(network);
    if (!q)
      this.waiting.set(
        network,
        (q = { fair: new FairQueue<Waiter>(), running: false, again: false, timer: null, backoff: FIRST_BACKOFF_MS }),
      );
    return q;
  }

  private leased(
    network: string,
    known: Map<string, Keypair>,
    address: string,
    token: string,
    party: SettleParty | null,
  ): LeasedChannel {
    this.count(network, +1);
    const q = this.queueOf(network);
    q.fair.hold(party, 1);
    let released = false;
    const renew = () => this.leases.renew(network, address, token, this.leaseSeconds);
    // Heartbeat: the lease stays ours while this process lives; its expiry only matters once the process is gone.
    const heartbeat = setInterval(
      () => void renew().catch(() => undefined),
      Math.max(200, (this.leaseSeconds * 1000) / 3),
    );
    heartbeat.unref();
    return {
      address,
      token,
      keypair: known.get(address) as Keypair,
      release: async (opts?: { freed?: boolean }) => {
        if (released) return;
        released = true;
        clearInterval(heartbeat);
        this.count(network, -1);
        q.fair.hold(party, -1);
        try {
          if (!opts?.freed) await this.leases.release(network, address, token);
        } finally {
          // A channel of this pool may be free now (this one, or the one the final answer of its transaction freed),
          // and this party holds one less: the dispatcher asks at once.
          q.backoff = FIRST_BACKOFF_MS;
          this.dispatch(network);
        }
      },
      renew,
    };
  }

  private count(network: string, delta: number): void {
    const n = Math.max(0, (this.held.get(network) ?? 0) + delta);
    this.held.set(network, n);
    this.metrics?.channelsBusy.set({ network }, n);
  }
}

export interface ChannelSetup {
  /** Pool size per network on the local network (channels are derived from the seed and funded at start). */
  channelAccounts: number;
  /** Secret seeds per network for real networks, the same list for every process. Never logged. */
  channelSecrets: Partial<Record<string, string[]>>;
  /** The local network's channel seed (any string); else read from (or created in) `channelSeedFile`; else random. */
  channelSeed?: string;
  channelSeedFile?: string;
}

/** The seed the local network's channel keypairs derive from: given, else the data folder's file (created once). */
export function channelSeed(setup: Pick<ChannelSetup, 'channelSeed' | 'channelSeedFile'>): string {
  if (setup.channelSeed) return setup.channelSeed;
  if (!setup.channelSeedFile) return crypto.randomBytes(32).toString('hex');
  fs.mkdirSync(path.dirname(setup.channelSeedFile), { recursive: true });
  try {
    // 'wx': only one process creates it; the others read what it wrote.
    fs.writeFileSync(setup.channelSeedFile, crypto.randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  for (let i = 0; i < 50; i++) {
    const seed = fs.readFileSync(setup.channelSeedFile, 'utf8').trim();
    if (seed.length >= 32) return seed;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10); // the creator is still writing it
  }
  throw new Error('the channel seed file is empty');
}

/** Channel keypair `index` of `network`, derived from the seed. */
export function derivedChannel(seed: string, network: string, index: number): Keypair {
  return Keypair.fromRawEd25519Seed(crypto.createHmac('sha256', seed).update(`channel:${network}:${index}`).digest());
}

/** Deadline of one RPC call while the pool is set up at start. */
const CHANNEL_SETUP_TIMEOUT_MS = 8_000;

/** Fills the pool: seed-derived funded accounts on the local network, configured secrets elsewhere. */
export async function setUpChannels(
  pool: ChannelAccountPool,
  networks: NetworkRegistry,
  setup: ChannelSetup,
): Promise<void> {
  for (const n of networks.list()) {
    if (!n.rpcUrl || !n.settlementEnabled) continue;
    const secrets = setup.channelSecrets[n.network] ?? [];
    if (n.local && secrets.length === 0) {
      const seed = channelSeed(setup);
      const keypairs = Array.from({ length: setup.channelAccounts }, (_, i) => derivedChannel(seed, n.network, i));
      // The accounts are looked up together: one getLedgerEntries for the whole pool (soroban-rpc.ts batches them).
      const server = sorobanRpc(n.rpcUrl, CHANNEL_SETUP_TIMEOUT_MS);
      const exists = (address: string) =>
        server.account(address).then(
          (a) => a !== null,
          () => false,
        );
      await Promise.all(
        keypairs.map(async (k) => {
          if (await exists(k.publicKey())) return; // another process (or an earlier start) funded it
          const funded = await localNetworkClient(n.rpcUrl as string)
            .fund(k.publicKey())
            .then(
              () => null,
              (err: Error) => err,
            );
          if (funded && !(await exists(k.publicKey()))) {
            throw new Error(`friendbot could not fund a channel account on ${n.network} (${funded.message})`);
          }
        }),
      );
      await pool.add(n.network, keypairs);
    } else {
      await pool.add(
        n.network,
        secrets.map((s) => Keypair.fromSecret(s)),
      );
    }
  }
}
