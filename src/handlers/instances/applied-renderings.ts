// What this process last applied for each instance's children. The instances handler is woken
// by more than the instance: a target that names the instance's Service (its caBundle is what a
// CA rotation waits on), a config while the instance is being deleted. None of those change what
// the children are rendered from, and applying all of them again on every wake cost about ten
// requests per instance per target repoint: twenty per move, thousands in a rebalance.
//
// A wake whose rendering equals what this process applied within the re-apply period skips the
// applies. What the memo cannot see is a child changed or deleted by someone else: the
// Deployment is recorded on the bus (its deletion wakes the handler, and it is applied again
// whenever the view does not hold it); the other children are not, and drift in them is
// repaired at the next re-apply, which the period bounds. Another replica, or this one after a
// restart, starts with an empty memo and applies once.
import { createHash } from 'node:crypto';

/** Ten minutes: how long an unrecorded child changed by someone else may stay changed. */
export const REAPPLY_AFTER_MS = 10 * 60_000;

export class AppliedRenderings {
  private readonly applied = new Map<string, { fingerprint: string; atMs: number }>();
  private readonly reapplyAfterMs: number;

  constructor(reapplyAfterMs = REAPPLY_AFTER_MS) {
    this.reapplyAfterMs = reapplyAfterMs;
  }

  /** Whether this process applied exactly `fingerprint` for `instance` less than the period ago (monotonic ms). */
  isFresh(instance: string, fingerprint: string, nowMs: number): boolean {
    const last = this.applied.get(instance);
    return last !== undefined && last.fingerprint === fingerprint && nowMs - last.atMs < this.reapplyAfterMs;
  }

  remember(instance: string, fingerprint: string, nowMs: number): void {
    this.applied.set(instance, { fingerprint, atMs: nowMs });
  }

  forget(instance: string): void {
    this.applied.delete(instance);
  }
}

/** A digest of rendered objects: equal renderings, equal digests (rendering is deterministic). */
export function renderingFingerprint(objects: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(objects)).digest('hex');
}
