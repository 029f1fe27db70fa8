/**
 * Time-slot arithmetic for the fleet-wide pacer. Time is cut into slots of
 * 1000/rate ms: slot i covers [slotStart(i), slotStart(i+1)). A release needs a
 * slot token, and a token is only claimed *during its own slot* (the claimer
 * waits for the slot to start, and never claims a slot that is already over),
 * while the KV store lets exactly one claimer create each slot's key. So in
 * any window of W ms at most ceil(W*rate/1000)+1 releases start, whatever the
 * number of replicas. Pure functions of the clock reading, so they are tested
 * exactly.
 */

/** Rates above 1000/s would make slots shorter than the millisecond clock. */
export const MAX_RATE_PER_SECOND = 1_000;

export function assertRate(ratePerSecond: number): void {
  if (!(ratePerSecond > 0 && ratePerSecond <= MAX_RATE_PER_SECOND)) {
    throw new Error(`pacer rate must be in (0, ${MAX_RATE_PER_SECOND}] per second, got ${ratePerSecond}`);
  }
}

export function slotIntervalMs(ratePerSecond: number): number {
  return 1_000 / ratePerSecond;
}

/** The slot that contains instant `nowMs`. */
export function slotIndex(nowMs: number, ratePerSecond: number): number {
  return Math.floor((nowMs * ratePerSecond) / 1_000);
}

/** The first whole millisecond that belongs to slot `index`. */
export function slotStartMs(index: number, ratePerSecond: number): number {
  const start = Math.ceil((index * 1_000) / ratePerSecond);
  // Guard against floating-point rounding putting `start` in the previous slot.
  return slotIndex(start, ratePerSecond) < index ? start + 1 : start;
}

/**
 * The next slot a claimer should try: the current one, unless this process
 * already tried it or a later one (then the one after that).
 */
export function nextSlotToTry(nowMs: number, ratePerSecond: number, lastTried: number | undefined): number {
  const current = slotIndex(nowMs, ratePerSecond);
  return lastTried === undefined ? current : Math.max(current, lastTried + 1);
}

/** How long to wait before slot `index` may be claimed (0 when it already started). */
export function waitForSlotMs(index: number, nowMs: number, ratePerSecond: number): number {
  return Math.max(0, slotStartMs(index, ratePerSecond) - nowMs);
}

/** KV key of a slot token. */
export function slotKey(index: number): string {
  return `slot.${index}`;
}

/** Upper bound on releases that can start within a window of `windowMs`. */
export function maxReleasesIn(windowMs: number, ratePerSecond: number): number {
  return Math.ceil((windowMs * ratePerSecond) / 1_000) + 1;
}
