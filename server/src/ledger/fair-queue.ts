import type { PartyKind, SettleParty } from '../domain/facilitator/types';

/**
 * Fair capacity (issue #29 item 12): the settles of one process waiting for a channel of one network. Not one FIFO:
 * the next settle served is the one whose parties (seller paid, payer, calling client) hold the fewest channels of
 * this process, then the one whose parties were served longest ago, then the oldest; so a client flooding settles
 * from five sellers is served in turn with everyone else, never ahead of them. Waiting places are bounded per party
 * and in all: a settle beyond them is refused at once (the caller gets 503 with Retry-After), not after a long wait.
 */
export const PARTY_KINDS: readonly PartyKind[] = ['client', 'seller', 'payer'];

/** Waiting places of one process and network: in all, and per seller, payer and client. */
export interface QueuePlaces {
  total: number;
  seller: number;
  payer: number;
  client: number;
}

export function partyKey(kind: PartyKind, party: SettleParty): string {
  return `${kind}:${kind === 'seller' ? party.sellerId : party[kind]}`;
}

function keysOf(party: SettleParty | null): string[] {
  return party ? PARTY_KINDS.map((k) => partyKey(k, party)) : [];
}

/**
 * A waiter: its party, and the payment it settles (`key`: duplicates of one payment share one waiting place, since
 * only one of them can settle; the others end REPLAY_DETECTED once it is claimed).
 */
export class FairQueue<W extends { party: SettleParty | null; key: string | null }> {
  private readonly entries: Array<{ w: W; seq: number }> = [];
  private readonly waitingPer = new Map<string, number>();
  /** Waiters per payment key; a payment holds one place whatever its number of duplicates. */
  private readonly perKey = new Map<string, number>();
  private places = 0;
  private readonly heldPer = new Map<string, number>();
  private readonly lastServed = new Map<string, number>();
  private seq = 0;
  private served = 0;

  get size(): number {
    return this.entries.length;
  }

  /** The bound a new waiter of `party` would go beyond (and that bound's size), or null when it may wait. */
  refusal(
    party: SettleParty | null,
    places: QueuePlaces,
    key: string | null = null,
  ): { bound: 'total' | PartyKind; limit: number } | null {
    if (key !== null && this.perKey.has(key)) return null;
    if (this.places >= places.total) return { bound: 'total', limit: places.total };
    if (!party) return null;
    for (const kind of PARTY_KINDS) {
      if ((this.waitingPer.get(partyKey(kind, party)) ?? 0) >= places[kind])
        return { bound: kind, limit: places[kind] };
    }
    return null;
  }

  push(w: W): void {
    this.entries.push({ w, seq: ++this.seq });
    if (w.key !== null && this.perKey.has(w.key)) {
      bump(this.perKey, w.key, 1);
      return;
    }
    if (w.key !== null) this.perKey.set(w.key, 1);
    this.places++;
    for (const k of keysOf(w.party)) this.waitingPer.set(k, (this.waitingPer.get(k) ?? 0) + 1);
  }

  /** Takes `w` out of the queue (served or gone); false when it was not in it. */
  remove(w: W): boolean {
    const i = this.entries.findIndex((e) => e.w === w);
    if (i < 0) return false;
    this.entries.splice(i, 1);
    if (w.key !== null) {
      bump(this.perKey, w.key, -1);
      if (this.perKey.has(w.key)) return true; // a duplicate still waits in this payment's place
    }
    this.places--;
    for (const k of keysOf(w.party)) bump(this.waitingPer, k, -1);
    return true;
  }

  /** The waiter to serve next among those `skip` does not exclude (see the class comment for the order). */
  next(skip: (w: W) => boolean): W | undefined {
    let best: { w: W; held: number; last: number; seq: number } | undefined;
    for (const e of this.entries) {
      if (skip(e.w)) continue;
      const keys = keysOf(e.w.party);
      const held = Math.max(0, ...keys.map((k) => this.heldPer.get(k) ?? 0));
      const last = Math.max(0, ...keys.map((k) => this.lastServed.get(k) ?? 0));
      if (
        !best ||
        held < best.held ||
        (held === best.held && (last < best.last || (last === best.last && e.seq < best.seq)))
      )
        best = { w: e.w, held, last, seq: e.seq };
    }
    return best?.w;
  }

  /** Channels `party` holds in this process (by kind). */
  held(kind: PartyKind, party: SettleParty): number {
    return this.heldPer.get(partyKey(kind, party)) ?? 0;
  }

  /** A channel was given to (delta +1) or given back by (-1) `party` in this process. */
  hold(party: SettleParty | null, delta: 1 | -1): void {
    const keys = keysOf(party);
    if (delta > 0) this.served++;
    for (const k of keys) {
      bump(this.heldPer, k, delta);
      if (delta > 0) this.lastServed.set(k, this.served);
      // A party with nothing held or waiting here is forgotten (the maps stay as small as the live parties).
      else if (!this.heldPer.has(k) && !this.waitingPer.has(k)) this.lastServed.delete(k);
    }
  }
}

function bump(m: Map<string, number>, k: string, delta: number): void {
  const n = (m.get(k) ?? 0) + delta;
  if (n > 0) m.set(k, n);
  else m.delete(k);
}
