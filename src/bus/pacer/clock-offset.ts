/**
 * The offset of this replica's clock to the NATS server's, estimated from one
 * KV write: the server stamps the stored entry with its own clock somewhere
 * between the moment we sent the write and the moment its ack came back, so
 * offset ≈ stamp − midpoint, within ± half the round trip. Slots are claimed
 * on the corrected clock (`server-clock.ts`), so every replica cuts time into
 * the same slots whatever its own clock says: a replica 90 s behind would
 * otherwise claim slots whose tokens the bucket already expired (max_age
 * 60 s) and double the fleet rate (issue 9, item 10). Pure, tested exactly.
 */

export interface OffsetSample {
  /** serverMs − localMs. */
  offsetMs: number;
  /** Half the round trip: the true offset is within ± this. */
  uncertaintyMs: number;
}

export function offsetFromWrite(sentMs: number, ackedMs: number, serverStampMs: number): OffsetSample {
  if (ackedMs < sentMs) throw new Error(`ack before send (${ackedMs} < ${sentMs}): not a monotonic reading`);
  const midpoint = (sentMs + ackedMs) / 2;
  return { offsetMs: serverStampMs - midpoint, uncertaintyMs: (ackedMs - sentMs) / 2 };
}

/**
 * Keeps the current estimate unless the new sample is tight enough to trust:
 * a sample whose round trip was slow (a GC pause, a busy server) is worse
 * than the one we have, but every estimate ages (clocks drift, NTP steps), so
 * a sample within `acceptableUncertaintyMs` always replaces it.
 */
export function nextOffset(
  current: OffsetSample | undefined,
  sample: OffsetSample,
  acceptableUncertaintyMs: number,
): OffsetSample {
  if (current === undefined) return sample;
  if (sample.uncertaintyMs <= acceptableUncertaintyMs) return sample;
  return sample.uncertaintyMs < current.uncertaintyMs ? sample : current;
}

/**
 * The correction slots are claimed with: none while the offset is within the
 * dead band. Replicas on NTP-synced clocks differ by a few ms, about as much
 * as the estimate's own error, and correcting by that noise gives whichever
 * replica's estimate runs earliest nearly every slot; left uncorrected, such
 * a skew compresses at most `deadBandMs` of slots into a burst
 * (deadBandMs × rate / 1000 releases: 2.5 at 50/s for 50 ms).
 */
export function correctionMs(estimate: OffsetSample | undefined, deadBandMs: number): number {
  if (estimate === undefined || Math.abs(estimate.offsetMs) <= deadBandMs) return 0;
  return estimate.offsetMs;
}
