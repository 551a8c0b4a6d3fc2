import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { DomainError } from '../domain/errors';
import type { AcquireOptions, ChannelLease, ChannelLeaseRepository, ChannelLeaser } from '../domain/facilitator/types';
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
 * 0005). A lease is a row taken with FOR UPDATE SKIP LOCKED, stamped with this lease's token and a short expiry
 * (`leaseSeconds`, default 15 s), renewed by a heartbeat (every third of it) for as long as the holder keeps it: a
 * process that dies without releasing its leases frees its unpinned channels within `leaseSeconds`. Once the settlement transaction is built its hash is pinned on
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
  wake(): void;
  /** A channel was released in this process since this waiter last tried: it asks the lease table at once. */
  granted: boolean;
  /** Asking the lease table now. */
  trying: boolean;
}

/** How often a settle waiting for a channel (not at the head of the queue) runs its `whileWaiting` check. */
const WAITER_CHECK_MS = 200;

export interface ChannelPoolOptions {
  /** Expiry of a lease without a pinned transaction (renewed every third of it while held). Default 15 s. */
  leaseSeconds?: number;
  /** How long acquire waits for a free channel before SERVICE_UNAVAILABLE. Default 30 s. */
  acquireTimeoutMs?: number;
  /** Wait between two tries while every channel is busy. Default 50 ms. */
  pollMs?: number;
}

export class ChannelAccountPool implements ChannelLeaser {
  private readonly keys = new Map<string, Map<string, Keypair>>();
  private readonly held = new Map<string, number>();
  /** Settles of this process waiting for a channel, per network, in arrival order. */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly leaseSeconds: number;
  private readonly acquireTimeoutMs: number;
  private readonly pollMs: number;

  constructor(
    private readonly leases: ChannelLeaseRepository,
    private readonly metrics?: FacilitatorMetrics,
    opts: ChannelPoolOptions = {},
  ) {
    this.leaseSeconds = opts.leaseSeconds ?? 15;
    this.acquireTimeoutMs = opts.acquireTimeoutMs ?? 30_000;
    this.pollMs = opts.pollMs ?? 50;
  }

  async add(network: string, keypairs: Keypair[]): Promise<void> {
    const known = this.keys.get(network) ?? new Map<string, Keypair>();
    for (const k of keypairs) known.set(k.publicKey(), k);
    this.keys.set(network, known);
    await this.leases.register(network, keypairs.map((k) => k.publicKey()));
    this.metrics?.channelsTotal.set({ network }, known.size);
  }

  size(network: string): number {
    return this.keys.get(network)?.size ?? 0;
  }

  addresses(network: string): string[] {
    return [...(this.keys.get(network)?.keys() ?? [])];
  }

  /**
   * Takes a free channel. When none is free, the caller joins this process's queue for the network: only the head of
   * the queue asks the database again (backing off up to `pollMs`), and each channel released in this process wakes
   * one more waiter at once (the first not already asking), so waiting settles do not poll the lease table each, and
   * channels freed together (one ledger's final answers) are taken by as many waiters in parallel, not one by one. Others in the queue run `opts.whileWaiting` every
   * WAITER_CHECK_MS (it may throw to stop waiting: the settle whose attempt was claimed by another). Gives up after
   * `acquireTimeoutMs` with SERVICE_UNAVAILABLE and Retry-After. The queue only orders this process's own tries: the
   * lease itself is always decided by the database.
   */
  async acquire(network: string, opts: AcquireOptions = {}): Promise<LeasedChannel> {
    const known = this.keys.get(network);
    if (!known || known.size === 0) throw new DomainError('SERVICE_UNAVAILABLE', `No channel accounts are configured for ${network}`);
    const token = crypto.randomUUID();
    const addresses = [...known.keys()];
    const queue = this.queueOf(network);
    // Nobody waiting here: try at once (a burst's arrivals all try concurrently, as many as channels are free win).
    if (queue.length === 0) {
      const address = await this.leases.take(network, addresses, token, this.leaseSeconds);
      if (address) return this.leased(network, known, address, token);
    }
    const deadline = Date.now() + this.acquireTimeoutMs;
    const me: Waiter = { wake: () => undefined, granted: false, trying: false };
    queue.push(me);
    let wait = Math.min(this.pollMs, 10);
    let checked = Date.now();
    try {
      for (;;) {
        const head = queue[0] === me;
        if (head || me.granted) {
          me.granted = false;
          me.trying = true;
          try {
            const address = await this.leases.take(network, addresses, token, this.leaseSeconds);
            if (address) return this.leased(network, known, address, token);
          } finally {
            me.trying = false;
          }
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new DomainError('SERVICE_UNAVAILABLE', `Every channel account of ${network} is busy; the payment was not used: retry the same settle shortly`, [], {
            'Retry-After': String(Math.max(1, Math.ceil(this.leaseSeconds / 3))),
          });
        }
        const pause = head ? wait * (0.5 + Math.random()) : WAITER_CHECK_MS;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(pause, left));
          me.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        me.wake = () => undefined;
        if (head) wait = Math.min(wait * 2, this.pollMs);
        if (opts.whileWaiting && (queue[0] === me || Date.now() - checked >= WAITER_CHECK_MS)) {
          checked = Date.now();
          await opts.whileWaiting();
        }
      }
    } finally {
      const i = queue.indexOf(me);
      if (i >= 0) queue.splice(i, 1);
      // The next in line tries at once: the head leaving may mean more channels are free, or it is simply its turn.
      if (i === 0) queue[0]?.wake();
      // Woken for a released channel but leaving without asking (its attempt was claimed elsewhere): pass it on.
      if (me.granted) this.grantOne(network);
    }
  }

  /** Wakes the first waiter of the network that is not asking the lease table already (nor woken for it). */
  private grantOne(network: string): void {
    const w = this.queueOf(network).find((x) => !x.trying && !x.granted);
    if (!w) return;
    w.granted = true;
    w.wake();
  }

  private queueOf(network: string): Waiter[] {
    let q = this.waiting.get(network);
    if (!q) this.waiting.set(network, (q = []));
    return q;
  }

  private leased(network: string, known: Map<string, Keypair>, address: string, token: string): LeasedChannel {
    this.count(network, +1);
    let released = false;
    const renew = () => this.leases.renew(network, address, token, this.leaseSeconds);
    // Heartbeat: the lease stays ours while this process lives; its expiry only matters once the process is gone.
    const heartbeat = setInterval(() => void renew().catch(() => undefined), Math.max(200, (this.leaseSeconds * 1000) / 3));
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
        try {
          if (!opts?.freed) await this.leases.release(network, address, token);
        } finally {
          // A channel of this pool may be free now (this one, or the one the final answer of its transaction freed):
          // one more waiter asks for it at once.
          this.grantOne(network);
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
export async function setUpChannels(pool: ChannelAccountPool, networks: NetworkRegistry, setup: ChannelSetup): Promise<void> {
  for (const n of networks.list()) {
    if (!n.rpcUrl || !n.settlementEnabled) continue;
    const secrets = setup.channelSecrets[n.network] ?? [];
    if (n.local && secrets.length === 0) {
      const seed = channelSeed(setup);
      const keypairs = Array.from({ length: setup.channelAccounts }, (_, i) => derivedChannel(seed, n.network, i));
      // The accounts are looked up together: one getLedgerEntries for the whole pool (soroban-rpc.ts batches them).
      const server = sorobanRpc(n.rpcUrl, CHANNEL_SETUP_TIMEOUT_MS);
      const exists = (address: string) => server.account(address).then((a) => a !== null, () => false);
      await Promise.all(
        keypairs.map(async (k) => {
          if (await exists(k.publicKey())) return; // another process (or an earlier start) funded it
          const funded = await localNetworkClient(n.rpcUrl as string).fund(k.publicKey()).then(() => null, (err: Error) => err);
          if (funded && !(await exists(k.publicKey()))) {
            throw new Error(`friendbot could not fund a channel account on ${n.network} (${funded.message})`);
          }
        }),
      );
      await pool.add(n.network, keypairs);
    } else {
      await pool.add(n.network, secrets.map((s) => Keypair.fromSecret(s)));
    }
  }
}
