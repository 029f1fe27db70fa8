// Resync rounds: when a handler concern reconciles every key of its concern again, and under
// which message ids, so that a lost or mis-decided work item cannot leave the system wrong for
// good (controllers are level-triggered; a restart and a slow period re-derive everything).
// Pure: the runner (handlers/resync.ts) passes the clock reading, the view's sequence and what
// the bus says is still waiting.
//
// Two replicas of a concern must not double a round. Both derive the same message ids for the
// same round, which the bus's duplicate window stores once:
//   * period rounds are cut on one grid of wall-clock time (round n starts at n × period since
//     the epoch), so replicas firing round n publish the same ids whatever their start times;
//   * a start round is named by the view sequence it was derived from: replicas that start on a
//     quiet bus read the same sequence. Replicas whose views differ publish distinct ids; the
//     guard below then skips the later one, since the earlier one is still being released.
// A round never starts while items of an earlier one still wait for their release: a round of
// 50,000 keys at 50/s takes 1,000 s, and a shorter period must not stack rounds behind it.

export type ResyncRound = { kind: 'start'; viewSeq: number } | { kind: 'period'; index: number };

/** The round's name in message ids, logs and metrics: `start-<view seq>` or `period-<n>`. */
export function roundName(round: ResyncRound): string {
  return round.kind === 'start' ? `start-${round.viewSeq}` : `period-${round.index}`;
}

/**
 * The id of one key's item in one round: the same for every replica deriving that round. The
 * fan-out publish carries it as `fanout:<id>` and the released work item as `<id>`, as the
 * router's paced items do.
 */
export function resyncMsgId(concern: string, round: ResyncRound, key: string): string {
  return `resync:${concern}:${roundName(round)}:${key}`;
}

/** The period round due next after `nowMs`, and when it is due (ms since the epoch). */
export function nextPeriodRound(nowMs: number, periodMs: number): { index: number; atMs: number } {
  if (!(periodMs > 0)) throw new Error(`a resync period must be positive, got ${periodMs} ms`);
  const index = Math.floor(nowMs / periodMs) + 1;
  return { index, atMs: index * periodMs };
}

export type RoundDecision = { publish: true } | { publish: false; reason: string };

/**
 * Whether to publish a round, given the items of this concern's resync still waiting in the
 * fan-out stream (undelivered, or delivered and not yet released). `resumed`: part of this very
 * round was published before a failure; it is published again whatever waits, since its ids
 * are the same and what was stored already is stored once.
 */
export function decideRound(waiting: number, resumed: boolean): RoundDecision {
  if (resumed || waiting === 0) return { publish: true };
  return {
    publish: false,
    reason: `${waiting} items of an earlier round still wait for release, and that round covers every key`,
  };
}

/** How long releasing `keys` items takes at `ratePerSecond`, in seconds: what a round costs in time. */
export function roundSeconds(keys: number, ratePerSecond: number): number {
  return keys / ratePerSecond;
}
