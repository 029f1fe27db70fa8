/**
 * Claims time-slot tokens in a KV bucket (the adapter over `slots.ts`). A
 * claim is a KV create of `slot.<index>` (expected last subject sequence 0):
 * the server accepts exactly one create per key, so across every replica of
 * the fleet exactly one claimer wins each slot; the losers (10071 "wrong last
 * sequence") move on to the next slot and wait for its time. The bucket's
 * max_age (a minute) removes old tokens; nothing else ever deletes them.
 *
 * The clock must be one every replica shares: the pacer passes the server's
 * clock as estimated by `server-clock.ts`. On raw local clocks a skew of d ms
 * compresses d ms' worth of slots into a burst, and a replica more than the
 * bucket's max_age (60 s) behind re-creates expired slots and doubles the
 * fleet rate.
 */

import type { KV } from '@nats-io/kv';
import { systemClock } from '../../runtime/clock.ts';
import { isWrongLastSequence } from '../errors.ts';
import { assertRate, nextSlotToTry, slotIndex, slotKey, waitForSlotMs } from './slots.ts';

export interface SlotClaimerOptions {
  kv: KV;
  ratePerSecond: number;
  /** Written as the token's value, for debugging (who released what). */
  owner: string;
  clock?: () => number;
}

export class SlotClaimer {
  private readonly kv: KV;
  private readonly rate: number;
  private readonly owner: string;
  private readonly clock: () => number;
  private lastTried: number | undefined;
  /** Slots this process tried but another claimer had won. */
  lost = 0;
  won = 0;

  constructor(opts: SlotClaimerOptions) {
    assertRate(opts.ratePerSecond);
    this.kv = opts.kv;
    this.rate = opts.ratePerSecond;
    this.owner = opts.owner;
    this.clock = opts.clock ?? Date.now;
  }

  /**
   * Waits for and wins the next free slot; returns its index. Rejects when
   * `signal` aborts.
   */
  async claim(signal: AbortSignal): Promise<number> {
    for (;;) {
      signal.throwIfAborted();
      // Synchronous pick, so concurrent lanes of this process never race each other for a slot.
      const slot = nextSlotToTry(this.clock(), this.rate, this.lastTried);
      this.lastTried = slot;
      const wait = waitForSlotMs(slot, this.clock(), this.rate);
      if (wait > 0) {
        await systemClock.sleep(wait, signal);
        signal.throwIfAborted();
      }
      // A slot that ended while we waited (event-loop stall) is not claimed late: that would be a burst.
      if (slotIndex(this.clock(), this.rate) > slot) continue;
      try {
        await this.kv.put(slotKey(slot), this.owner, { previousSeq: 0 });
        this.won++;
        return slot;
      } catch (err) {
        if (isWrongLastSequence(err)) {
          this.lost++;
          continue;
        }
        throw err;
      }
    }
  }
}
