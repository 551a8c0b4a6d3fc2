import { refuseUnlessVerified } from './settle-refusals';
import type { AttemptRecord, ChannelLease, ChannelLeaser, AttemptRepository, SettleParty } from './types';

/**
 * selectChannel: how a settle gets the channel account it submits from. The choice itself is the shared pool's
 * (ledger/channel-accounts.ts `ChannelAccountPool.acquire`): a free channel at once when nobody waits in this process,
 * else a place in the process's fair queue (per seller, payer and client caps), the lease decided by the database
 * (data/channel-lease-repository.ts `takeFor`) so that processes never share a channel. This file is the domain's
 * side of it: while a settle waits, it re-reads its attempt only to stop when a duplicate claimed it, spaced by the
 * number of distinct attempts waiting (every 200 ms for a storm of duplicates of one payment, about ten reads per
 * 200 ms in all when many different payments wait); reads of one attempt are shared.
 */
export type SelectChannel = (attempt: AttemptRecord, party: SettleParty) => Promise<ChannelLease>;

/** The selectChannel of one process (its waiting settles are counted together). */
export function channelSelection(deps: { channels: ChannelLeaser; attempts: Pick<AttemptRepository, 'findAttempt'> }) {
  const waitingAttempts = new Map<string, number>();
  const reading = new Map<string, Promise<AttemptRecord | null>>();
  const checkEveryMs = () => 200 * Math.max(1, waitingAttempts.size / 10);
  function currentAttempt(id: string): Promise<AttemptRecord | null> {
    let p = reading.get(id);
    if (!p) {
      p = deps.attempts.findAttempt(id).finally(() => reading.delete(id));
      reading.set(id, p);
    }
    return p;
  }
  const selectChannel: SelectChannel = async (attempt, party) => {
    let lastRead = Date.now();
    waitingAttempts.set(attempt.id, (waitingAttempts.get(attempt.id) ?? 0) + 1);
    try {
      return await deps.channels.acquire(attempt.network, {
        party,
        attemptId: attempt.id,
        whileWaiting: async () => {
          if (Date.now() - lastRead < checkEveryMs()) return;
          lastRead = Date.now();
          const now = await currentAttempt(attempt.id);
          if (now) refuseUnlessVerified(now);
        },
      });
    } finally {
      const left = (waitingAttempts.get(attempt.id) ?? 1) - 1;
      if (left > 0) waitingAttempts.set(attempt.id, left);
      else waitingAttempts.delete(attempt.id);
    }
  };
  return selectChannel;
}
