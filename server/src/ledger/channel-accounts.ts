import { Keypair } from '@stellar/stellar-sdk';
import { DomainError } from '../domain/errors';
import type { ChannelLease, ChannelLeaser } from '../domain/facilitator/types';
import type { FacilitatorMetrics } from '../metrics/facilitator';
import type { NetworkRegistry } from './network-registry';

/**
 * Channel accounts: the facilitator's own source accounts that pay the fees of settlement transactions. Stellar
 * admits one transaction per source account per ledger, so throughput comes from a pool; a channel is leased to one
 * settlement at a time (one in-flight transaction per channel) and its sequence number is fetched fresh for every
 * transaction.
 *
 * The lease is in-process only. Correctness across processes comes from the database (the compare-and-set claim of
 * the attempt) and from fresh sequence numbers; but two processes sharing a channel would collide on sequence numbers
 * (txBadSeq -> a failed settlement, no money moved). So several processes must be given DISJOINT channel sets
 * (STELLAR_TESTNET_CHANNEL_SECRETS / STELLAR_PUBNET_CHANNEL_SECRETS per process). On the local network every process
 * creates its own random channels at start, which are disjoint by construction.
 */
export interface LeasedChannel extends ChannelLease {
  keypair: Keypair;
}

interface NetworkPool {
  free: Keypair[];
  all: Keypair[];
  waiters: Array<(k: Keypair) => void>;
}

export class ChannelAccountPool implements ChannelLeaser {
  private readonly pools = new Map<string, NetworkPool>();

  constructor(private readonly metrics?: FacilitatorMetrics) {}

  add(network: string, keypairs: Keypair[]): void {
    const pool = this.pools.get(network) ?? { free: [], all: [], waiters: [] };
    for (const k of keypairs) {
      pool.all.push(k);
      this.giveBack(pool, network, k);
    }
    this.pools.set(network, pool);
    this.metrics?.channelsTotal.set({ network }, pool.all.length);
    this.metrics?.channelsBusy.set({ network }, pool.all.length - pool.free.length);
  }

  size(network: string): number {
    return this.pools.get(network)?.all.length ?? 0;
  }

  addresses(network: string): string[] {
    return (this.pools.get(network)?.all ?? []).map((k) => k.publicKey());
  }

  async acquire(network: string): Promise<LeasedChannel> {
    const pool = this.pools.get(network);
    if (!pool || pool.all.length === 0) throw new DomainError('SERVICE_UNAVAILABLE', `No channel accounts are configured for ${network}`);
    const keypair = pool.free.pop() ?? (await new Promise<Keypair>((resolve) => pool.waiters.push(resolve)));
    this.metrics?.channelsBusy.set({ network }, pool.all.length - pool.free.length);
    let released = false;
    return {
      address: keypair.publicKey(),
      keypair,
      release: () => {
        if (released) return;
        released = true;
        this.giveBack(pool, network, keypair);
      },
    };
  }

  private giveBack(pool: NetworkPool, network: string, k: Keypair): void {
    const waiter = pool.waiters.shift();
    if (waiter) waiter(k);
    else pool.free.push(k);
    this.metrics?.channelsBusy.set({ network }, pool.all.length - pool.free.length);
  }
}

export interface ChannelSetup {
  /** Pool size per network on the local network (channels are created and funded at start). */
  channelAccounts: number;
  /** Secret seeds per network for real networks. Never logged. */
  channelSecrets: Partial<Record<string, string[]>>;
}

/** The local network's friendbot lives on its base URL: the RPC URL without its `/rpc` path. */
export function friendbotUrl(rpcUrl: string, address: string): string {
  const base = rpcUrl.replace(/\/rpc\/?$/, '').replace(/\/$/, '');
  return `${base}/friendbot?addr=${encodeURIComponent(address)}`;
}

/** Fills the pool: random funded accounts on the local network, configured secrets elsewhere. */
export async function setUpChannels(pool: ChannelAccountPool, networks: NetworkRegistry, setup: ChannelSetup): Promise<void> {
  for (const n of networks.list()) {
    if (!n.rpcUrl || !n.settlementEnabled) continue;
    if (n.local) {
      const keypairs = Array.from({ length: setup.channelAccounts }, () => Keypair.random());
      await Promise.all(
        keypairs.map(async (k) => {
          const res = await fetch(friendbotUrl(n.rpcUrl as string, k.publicKey()));
          if (!res.ok) throw new Error(`friendbot could not fund a channel account on ${n.network} (HTTP ${res.status})`);
        }),
      );
      pool.add(n.network, keypairs);
    } else {
      const secrets = setup.channelSecrets[n.network] ?? [];
      pool.add(n.network, secrets.map((s) => Keypair.fromSecret(s)));
    }
  }
}
